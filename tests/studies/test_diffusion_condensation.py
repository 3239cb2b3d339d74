"""The GADC study: the loop without Ray (subset metrics once, sample metrics on the cadence,
every method's budget from its own class, resume), the known mixture's Bayes classifier, a
config error, and an in-process CLI run with the claims in the summary."""

from __future__ import annotations

import json

import numpy as np
import pytest

from raystudy import LocalContext
from raystudy.cli import main
from raystudy.errors import ConfigError
from raystudy.platform.configuration.config import apply_overrides, validate
from raystudy.studies.diffusion_condensation.data import bayes_log_probs, mixture
from raystudy.studies.diffusion_condensation.recipe import (
    STUDY,
    CondensationConfig,
    train_loop,
)

TINY = {"n_train": 20, "n_test": 100, "per_class": 3, "steps": 40, "eval_every": 20,
        "refine_iters": 1, "classes": 3, "dim": 4, "hidden": 32, "sample_steps": 10}


def config(**overrides) -> CondensationConfig:
    return validate(apply_overrides(CondensationConfig(), {**TINY, **overrides}))


def run(cfg: CondensationConfig, checkpoint=None) -> LocalContext:
    ctx = LocalContext(STUDY.metrics, checkpoint=checkpoint)
    train_loop(cfg, ctx)
    return ctx


def test_loop_reports_subset_once_and_samples_each_evaluation():
    ctx = run(config(method="gadc_shipped"))
    first, last = ctx.reports
    assert [r["train/step"] for r in ctx.reports] == [20, 40]
    assert "subset/mmd2" in first and "subset/mmd2" not in last
    assert first["select/row_err"] >= 0 and 0 <= first["subset/tail_share"] <= 1
    assert 0 <= last["eval/precision"] <= 1 and 0 <= last["eval/class_acc"] <= 1
    assert np.isfinite(last["eval/mmd2"]) and last["eval/fd"] >= 0


@pytest.mark.parametrize("method", ["random", "kcenter", "d2c_style", "herding"])
def test_methods_share_the_diffusion_seed_and_resume(method):
    full = run(config(method=method))
    part = run(config(method=method, steps=20))
    resumed = run(config(method=method), checkpoint=part.last_checkpoint)
    assert [r["train/step"] for r in resumed.reports] == [40]
    assert resumed.reports[-1]["eval/mmd2"] == pytest.approx(full.reports[-1]["eval/mmd2"])
    chosen = part.last_checkpoint["chosen"]
    m = mixture(0, 3, 4, 20, 100)
    assert len(set(chosen)) == 9 and all((m.y_train[chosen] == c).sum() == 3
                                         for c in range(3))


def test_bayes_classifier_is_normalised_and_accurate():
    m = mixture(0, 4, 8, 50, 200)
    lp = bayes_log_probs(m, m.x_test)
    assert np.allclose(np.exp(lp).sum(1), 1)
    assert (lp.argmax(1) == m.y_test).mean() > 0.8
    assert 0.02 < m.tail_test.mean() < 0.09  # the 5 % tail


def test_bad_config_is_one_line():
    with pytest.raises(ConfigError, match="kappa"):
        config(kappa=0.5)
    with pytest.raises(ConfigError, match="per_class"):
        config(per_class=30)


def test_greedy_and_swap_trace_and_exact_solver():
    pytest.importorskip("ot")
    first = run(config(method="gadc", ot_solver="exact")).reports[0]
    assert first["select/J_swapped"] <= first["select/J_greedy"] + 1e-12
    assert first["select/row_err"] < 1e-6


def test_in_process_run_has_the_claims(tmp_path):
    assert main(["run", "diffusion_condensation", "--in-process", "--storage", str(tmp_path),
                 *[a for k, v in TINY.items() for a in ("--set", f"{k}={v}")]]) == 0
    run_dir = next(p for p in tmp_path.iterdir() if p.is_dir())
    text = json.dumps(json.loads((run_dir / "summary.json").read_text()))
    assert "G1 fidelity" in text and "G4 swaps" in text and "G5" in text
    assert {"subsets_seed0.png", "samples_seed0.png"} <= {
        p.name for p in (run_dir / "figures").iterdir()}


@pytest.mark.ray
def test_quick_sweep_through_the_cli(tmp_path, ray_session):
    """A sweep on Ray: every trial finishes, the claims are computed from paired seeds and
    the report carries the figures of the subsets and samples."""
    space = tmp_path / "space.yaml"
    space.write_text("params:\n  method: {grid: [random, partial_ot, gadc, gadc_shipped]}\n"
                     "  seed: {grid: [0, 1]}\n")
    assert main(["sweep", "diffusion_condensation", "--profile", "quick", "--space",
                 str(space), "--storage", str(tmp_path / "runs"), "--name", "q",
                 *[a for k, v in TINY.items() for a in ("--set", f"{k}={v}")]]) == 0
    run_dir = tmp_path / "runs" / "q"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["counts"]["finished"] == 8, summary["counts"]
    report = (run_dir / "report.md").read_text()
    for claim in ("G1 fidelity: gadc vs random on eval/mmd2", "G3 regularisers",
                  "G4 swaps: gadc's swaps", "G5 shipped vs converged"):
        row = next(line for line in report.splitlines() if claim in line)
        assert "| 2 |" in row, row  # paired over both seeds, not missing
    assert "subsets_seed0.png" in report and (run_dir / "figures" / "samples_seed0.png").exists()
