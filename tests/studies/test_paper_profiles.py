"""Every study's paper profile runs end to end, shrunk by ``--set`` only, on files in the
real formats (issue 21, section 3).

Each case is ``raystudy run STUDY --profile paper`` through the CLI: the profile's data
source and code path, with steps, sizes, seeds and widths made small, and the data a
cluster would read written here in its real format (paper_files.py). The run must
finish, write its report and summary, and report a finite primary metric; where cheap,
a number shows the fixture itself was read.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from paper_files import (
    unlabeled_transitions,
    write_d4rl_hopper,
    write_geom_gcn,
    write_lcbench,
    write_minari_hopper,
    write_raw,
    write_tahoe_plates,
    write_tokens,
)

from raystudy.cli import main
from raystudy.platform.runs.results import load_results

pytestmark = pytest.mark.ray


@dataclass
class Case:
    """One paper-profile run: ``write(folder)`` writes the data and returns the --set
    overrides that point at it; ``sets`` shrink the run; ``expect``: values of the trial's
    last report that only the fixture's contents give."""

    study: str
    write: Callable[[Path], dict[str, str]]
    sets: dict[str, str]
    args: tuple[str, ...] = ()
    expect: dict[str, float] = field(default_factory=dict)


def _tokens(folder: Path) -> dict[str, str]:
    write_tokens(folder, seq_len=32)
    return {"data.path": str(folder)}


def _cells(folder: Path) -> dict[str, str]:
    write_tahoe_plates(folder)
    return {"data.path": str(folder)}


def _mnist(folder: Path) -> dict[str, str]:
    from paper_files import fake_mnist

    fake_mnist(folder / "MNIST" / "raw", n_train=64, n_test=20)
    return {"stream.path": str(folder)}


def _d4rl(folder: Path) -> dict[str, str]:
    write_d4rl_hopper(folder)
    return {"data.root": str(folder)}


def _lcbench(folder: Path) -> dict[str, str]:
    folder.mkdir()
    return {"task.path": str(write_lcbench(folder / "data_2k.json", configs=12))}


# The real graph datasets in PyG's raw layouts, one run each: add a family's writer here.
GRAPHS: dict[str, Callable[[Path], None]] = {
    "Cora": lambda root: write_raw(root, "Cora"),
    "Texas": lambda root: write_geom_gcn(root / "WebKB" / "texas" / "raw", "texas"),
    "Actor": lambda root: write_geom_gcn(root / "Actor" / "raw", "film", sparse=True),
    "USA": lambda root: write_raw(root, "USA"),                      # Airports
    "roman-empire": lambda root: write_raw(root, "roman-empire"),    # heterophilous
}


def _graphs(root: Path) -> dict[str, str]:
    for write in GRAPHS.values():
        write(root)
    return {"data.root": str(root)}


# the paper mix random/1/10/30 on the fixture's episodes
IMITATION_DATA = {"data/good_episodes": 1, "data/bad_episodes": 10,
                  "data/unlabeled_transitions": unlabeled_transitions()}
CASES = {
    "optimizer_robustness": Case(
        "optimizer_robustness", _tokens,
        {"model.d_model": "32", "model.n_layers": "1", "model.n_heads": "2",
         "model.seq_len": "32", "train.steps": "4", "train.batch_size": "4",
         "train.eval_every": "2", "train.eval_batches": "2"},
        expect={"train/step": 4, "train/tokens": 4 * 4 * 32}),
    "cell_classifier": Case(
        "cell_classifier", _cells,
        {"data.val_cells": "64", "model.hidden": "16", "train.batch_size": "16",
         "train.eval_every": "10"},
        # one epoch over the 3 x 160 cells less the 64 held out, in minibatches of 16
        expect={"train/cells": 3 * 160 - 64}),
    "plasticity": Case(
        "plasticity", _mnist,
        {"stream.tasks": "3", "model.hidden": "16,16,16", "train.steps_per_task": "20",
         "metrics.samples": "32", "metrics.lanczos_iterations": "8"},
        expect={"task/index": 3}),
    "contrastive_imitation": Case(
        "contrastive_imitation", _d4rl,
        {"train.steps": "4", "train.disc_steps": "2", "train.batch_size": "16",
         "train.hidden": "16", "train.eval_every": "4", "train.eval_episodes": "2",
         "data.slice_length": "6"},              # 10 bad slices of 6 of the 72 random steps
        expect=IMITATION_DATA),
    "empirical_gp": Case(
        "empirical_gp", _lcbench,
        {"task.test_tasks": "4", "corpus.datasets": "10", "model.iterations": "3",
         "eval.baseline_steps": "5"},
        expect={"train/iterations": 3}),
}
GRAPH_CASE = Case("graph_transfer", _graphs,
                  {"train.epochs": "3", "train.patience": "2", "model.hidden": "8"},
                  expect={"audit/leakage_free": 1.0})


def _argv(case: Case, data: Path, runs: Path, name: str, command: str = "run") -> list[str]:
    sets = {**case.write(data), **case.sets, "train.threads": "1"}
    return [command, case.study, "--profile", "paper", "--storage", str(runs), "--name", name,
            "--optuna-storage", "off", *case.args,
            *(x for kv in sets.items() for x in ("--set", "=".join(kv)))]


def _check_run(case: Case, run: Path, trials: int = 1) -> list[dict]:
    """The run finished every trial with a finite primary metric and the expected values;
    returns each trial's swept params."""
    summary = json.loads((run / "summary.json").read_text())
    assert (run / "report.md").stat().st_size > 0
    assert summary["request"]["profile"] == "paper"
    assert summary["counts"]["finished"] == trials and not summary["errors"], summary["errors"]
    primary = summary["primary_metric"]["name"]
    for trial in summary["trials"]:
        assert math.isfinite(trial["metrics"][primary]), trial["metrics"]
    records = load_results(run).trials
    for record in records:
        assert {k: record.last.get(k) for k in case.expect} == case.expect
    return [record.params for record in records]


@pytest.mark.parametrize("key", list(CASES))
def test_paper_profile_runs_shrunk(key, ray_session, tmp_path):
    case = CASES[key]
    assert main(_argv(case, tmp_path / "data", tmp_path / "runs", "paper")) == 0
    _check_run(case, tmp_path / "runs" / "paper")


def test_graph_transfer_paper_profile_on_each_real_family(ray_session, tmp_path):
    """One trial per dataset of GRAPHS, as the paper's sweep runs them (its space, cut to
    those datasets x one backbone, mechanism and seed)."""
    space = tmp_path / "datasets.yaml"
    space.write_text(f"params:\n  data.dataset: {{grid: [{', '.join(GRAPHS)}]}}\n")
    argv = _argv(GRAPH_CASE, tmp_path / "data", tmp_path / "runs", "paper", "sweep")
    assert main([*argv, "--space", str(space)]) == 0
    params = _check_run(GRAPH_CASE, tmp_path / "runs" / "paper", trials=len(GRAPHS))
    assert sorted(p["data.dataset"] for p in params) == sorted(GRAPHS)


def test_contrastive_imitation_paper_profile_on_a_minari_store(tmp_path, monkeypatch):
    """data.source=minari: mujoco/hopper/{expert,simple}-v0 written with Minari's API. In
    its own process: trials find the store through MINARI_DATASETS_PATH, which Ray's
    workers take from the environment Ray starts in."""
    pytest.importorskip("minari", reason="minari is not installed (the imitation extra)")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    write_minari_hopper()
    case = Case("contrastive_imitation", lambda _: {"data.source": "minari"},
                CASES["contrastive_imitation"].sets, expect=IMITATION_DATA)
    proc = subprocess.run([sys.executable, "-m", "raystudy",
                           *_argv(case, tmp_path, tmp_path / "runs", "minari")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    _check_run(case, tmp_path / "runs" / "minari")
