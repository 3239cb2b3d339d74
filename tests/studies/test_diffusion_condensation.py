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
    # the shipped solver's own row error on its subset, and the probe-space metrics
    assert first["select/shipped_row_err"] > first["select/row_err"]
    assert first["select/eps_over_median_c"] > 0
    assert np.isfinite(last["eval/mmd2_rf"]) and 0 <= last["eval/recall_rf"] <= 1
    assert last["eval/chance"] == pytest.approx(1 / 3)


def test_n_iter_sets_the_shipped_solvers_iterations():
    """More Sinkhorn iterations leave a smaller row error on the same subset: ``n_iter``
    reaches the shipped solver (it was once a field nothing read)."""
    errors = [run(config(method="gadc_shipped", n_iter=n, steps=20)).reports[0][
        "select/shipped_row_err"] for n in (2, 200)]
    assert errors[1] < 0.5 * errors[0]


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
    assert "G1 fidelity" in text and "G4 swaps" in text and "G5" in text and "G2b" in text
    assert "selection ratio 3 of 20 = 15.0 %" in text  # the scope
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


# ----------------------------------------------------------------------------- analyze
def reported_trial(method: str, seed: int, per_class: int = 10, n_train: int = 60,
                   data: str = "mixture", class_acc: float = 0.9, offset: float = 0.0):
    """A finished trial as the report reads it (one report: samples, subset and selection
    metrics); gadc's samples are the closest, by ``offset`` plus a per-method step."""
    from raystudy.contract.results import TrialRecord

    rank = ("gadc", "partial_ot", "balanced_ot", "gadc_shipped", "herding", "d2c_style",
            "random", "kcenter").index(method)
    level = 0.01 + 0.002 * rank + 0.0005 * seed + offset
    report = {"eval/mmd2": level, "eval/fd": 10 * level, "eval/mmd2_rf": level,
              "eval/fd_rf": 10 * level, "eval/precision_rf": 0.9 - level,
              "eval/recall_rf": 0.9 - level, "eval/precision": 0.9, "eval/recall": 0.9,
              "eval/class_acc": class_acc, "eval/chance": 0.25, "train/step": 800.0,
              "subset/tail_share": 0.01 * rank, "select/J_greedy": 10.0 + seed,
              "select/J_swapped": 9.0 + seed, "select/row_err": 1e-10,
              "select/shipped_row_err": 0.07, "select/eps_over_median_c": 0.061}
    config = {"method": method, "seed": seed, "per_class": per_class, "n_train": n_train,
              "data": data, "classes": 4, "dim": 8, "kappa": 1.05, "eps_rel": 0.05,
              "hidden": 128, "steps": 800, "threads": 1, "ot_solver": "converged"}
    return TrialRecord(f"{method}-{seed}", config, "finished", history=[report],
                       config=config)


METHODS = ("random", "kcenter", "herding", "d2c_style", "balanced_ot", "partial_ot", "gadc",
           "gadc_shipped")


def analysed(tmp_path, **trial_options):
    from raystudy.contract.results import RunResults
    from raystudy.studies.diffusion_condensation.analysis import analyze

    chance_for = trial_options.pop("at_chance", ())
    trials = [reported_trial(m, s, class_acc=0.26 if m in chance_for else 0.9,
                             **trial_options) for m in METHODS for s in range(10)]
    return analyze(RunResults(tmp_path, {"kind": "sweep"}, trials), tmp_path).claims


def test_claims_read_the_probe_space_name_the_stand_in_and_the_ratio(tmp_path):
    """G1 reads the random-feature probe (not the selection space); every tested row's
    scope names the generated mixture as a stand-in and the run's selection ratio; the
    not-run rows name the paper's ratio, subset sizes, real data and the paper's scale."""
    rows = analysed(tmp_path)
    g1 = [c for c in rows if c.statement.startswith("G1 fidelity")]
    assert len(g1) == 8 and all("_rf" in c.statement for c in g1)
    assert g1[0].effect.startswith("eval/mmd2_rf (probe space): gadc - ")
    assert {c.verdict for c in g1} == {"supported"}
    tested = [c for c in rows if c.verdict != "not run"]
    assert all("stand-in" in c.scope and "not ImageNet" in c.scope for c in tested)
    assert all("selection ratio 10 of 60 = 16.7 %" in c.scope for c in tested)
    not_run = {c.statement.split(" at ")[0].split(":")[0] for c in rows
               if c.verdict == "not run"}
    assert {"G1", "G1 across subset sizes", "G1-G5 on real data"} <= not_run, not_run
    assert any("paper's scale" in c.statement for c in rows if c.verdict == "not run")
    (ratio,) = [c for c in rows if c.verdict == "not run" and "selection ratio" in c.statement]
    assert "10 of 60 per class (16.7 %)" in ratio.note and "paper_ratio" in ratio.note
    g2b = next(c for c in rows if c.statement.startswith("G2b"))
    assert "subset/tail_share" in g2b.effect and g2b.verdict == "supported"
    g5 = next(c for c in rows if c.statement.startswith("G5"))
    assert "row-marginal error of 0.07" in g5.note and "eps / median(C) = 0.061" in g5.note


def test_a_run_at_the_paper_ratio_has_no_ratio_row(tmp_path):
    rows = analysed(tmp_path, per_class=5, n_train=500)
    assert all("selection ratio 5 of 500 = 1.0 %" in c.scope for c in rows
               if c.verdict != "not run")
    assert not [c for c in rows if c.verdict == "not run" and "selection ratio"
                in c.statement]


def test_a_model_at_chance_fails_the_precondition_of_its_sample_comparisons(tmp_path):
    """Random's model labels its samples at chance: every sample comparison with random
    reads "precondition failed" (its interval still shown); the others keep their verdict,
    and a subset-only comparison (G2b) has no such precondition."""
    rows = analysed(tmp_path, at_chance=("random",))
    with_random = [c for c in rows if " vs random " in c.statement]
    assert len(with_random) == 4
    assert {c.verdict for c in with_random} == {"precondition failed"}
    (failed,) = with_random[0].failed_preconditions
    assert failed.statement.startswith("random's model learnt its classes")
    assert "random 0.260 over 10 seeds vs chance 0.250" == failed.evidence
    assert with_random[0].effect_size < 0  # the interval is still there
    others = [c for c in rows if c.statement.startswith("G1") and " vs random " not in
              c.statement]
    assert others and "precondition failed" not in {c.verdict for c in others}
    assert next(c for c in rows if c.statement.startswith("G2b")).preconditions == ()


def test_digits_run_is_real_data_in_scope(tmp_path):
    rows = analysed(tmp_path, data="digits")
    tested = [c for c in rows if c.verdict != "not run"]
    assert all("8x8 digits (real" in c.scope for c in tested)
    assert not [c for c in rows if c.statement == "G1-G5 on real data"]
