"""empirical_gp: config and data checks, the loop without Ray, the quick sweep through the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from raystudy.cli import main
from raystudy.contract.context import LocalContext
from raystudy.errors import ConfigError, DataError
from raystudy.platform.configuration.config import apply_overrides, validate
from raystudy.studies.empirical_gp.config import EmpiricalGPConfig
from raystudy.studies.empirical_gp.recipe import STUDY, check_data, train_loop

TINY = {"task.test_tasks": 6, "corpus.datasets": 60, "model.reference_points": 12,
        "model.iterations": 4, "eval.baselines": "base,matern52", "eval.baseline_steps": 30,
        "eval.examples": 2}


def config(**overrides) -> EmpiricalGPConfig:
    return validate(apply_overrides(EmpiricalGPConfig(), {**TINY, **overrides}))


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_bad_values_name_their_key():
    cases = {
        "task.family": ("images", "task.family='images' is not one of gp, curves"),
        "task.horizons": ("1,x", "task.horizons='x' is not an integer"),
        "model.regularisation": ("shrinkage/2", "model.regularisation='shrinkage/2'"),
        "eval.baselines": ("base,cubic",
                           "eval.baselines='cubic' is not one of base, corpus_gp, rbf"),
        "model.base_fit": ("task", "model.base_fit='task' is not one of fixed, corpus"),
        "corpus.beyond_pool": ("resample", "corpus.beyond_pool='resample' is not one of"),
        "task.observed": (1.5, "task.observed=1.5 must be < 1"),
        "corpus.locations": ("random", "corpus.locations='random'"),
        "model.reference_points": (1, "model.reference_points=1 must be >= 2"),
        "model.iterations": (-1, "model.iterations=-1 must be >= 0"),
    }
    for key, (value, message) in cases.items():
        with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
            config(**{key: value})
    for key, value, message in (("task.horizons", "1,0", "task.horizons=0 must be >= 1"),
                                ("task.horizons", "", "task.horizons needs at least one"),
                                ("model.regularisation", "shrinkage",
                                 "model.regularisation='shrinkage': expected none")):
        with pytest.raises(ConfigError, match=message):
            config(**{key: value})
    with pytest.raises(ConfigError, match="reach past the 52 points of a curves curve"):
        config(**{"task.horizons": "1,45"})
    with pytest.raises(ConfigError, match="task.family=lcbench needs task.path"):
        config(**{"task.family": "lcbench"})
    with pytest.raises(ConfigError, match="task.test_datasets needs files of several datasets"):
        config(**{"task.test_datasets": 1})


def write_lcbench(path, datasets=("adult", "car"), configs=12, epochs=52, drop=None):
    rng = np.random.default_rng(0)
    data = {}
    for name in datasets:
        data[name] = {}
        for c in range(configs):
            rate, top = rng.uniform(0.05, 0.3), rng.uniform(60, 95)
            curve = top - (top - 20) * np.exp(-rate * np.arange(epochs))
            data[name][str(c)] = {"log": {"Train/val_accuracy": list(curve)}}
    if drop:
        del data[drop[0]][drop[1]]["log"]["Train/val_accuracy"]
    path.write_text(json.dumps(data))
    return path


def test_check_data_reads_the_files_and_says_what_is_wrong(tmp_path):
    path = write_lcbench(tmp_path / "data_2k.json", drop=("car", "3"))
    with pytest.raises(DataError, match=r"data_2k.json: data\['car'\]\['3'\] has no"):
        check_data(config(**{"task.family": "lcbench", "task.path": str(path)}))
    short = write_lcbench(tmp_path / "short.json", epochs=8)
    with pytest.raises(DataError, match="curves of 8 points are too short"):
        check_data(config(**{"task.family": "lcbench", "task.path": str(short)}))
    few = write_lcbench(tmp_path / "few.json", datasets=("adult",), configs=4)
    with pytest.raises(DataError, match="4 curves, need more than task.test_tasks"):
        check_data(config(**{"task.family": "lcbench", "task.path": str(few)}))
    with pytest.raises(DataError, match="none: no such file or folder; task.family=csv "
                                        r"expects a folder of \*.csv series"):
        check_data(config(**{"task.family": "csv", "task.path": str(tmp_path / "none")}))


def test_loop_on_learning_curves_beats_the_per_task_kernels():
    ctx = LocalContext(STUDY.metrics)
    train_loop(config(), ctx)
    (final,) = ctx.reports
    lls = ctx.last_checkpoint["log_likelihoods"]
    assert len(lls) == 5 and all(b >= a for a, b in zip(lls, lls[1:], strict=False))
    assert final["train/iterations"] == 4
    assert final["eval/nll"] == final["eval/egp/nll"]
    for key in ("eval/egp/rmse_h20", "eval/base/nll_h1", "eval/matern52/rmse", "train/noise",
                "task/covariance_error"):
        assert np.isfinite(final[key]), key
    assert final["eval/egp/nll"] < final["eval/base/nll"] < final["eval/matern52/nll"]
    assert final["eval/egp/rmse"] < final["eval/matern52/rmse"]


def test_loop_runs_the_corpus_gp_and_the_curve_models():
    ctx = LocalContext(STUDY.metrics)
    train_loop(config(**{"eval.baselines": "base,corpus_gp,pow3,log_power",
                         "model.base_fit": "corpus", "model.corpus_fit_steps": 20}), ctx)
    final = ctx.reports[-1]
    for method in ("egp", "base", "corpus_gp", "pow3", "log_power"):
        assert np.isfinite(final[f"eval/{method}/nll_h20"]), method
    assert 0.01 < final["train/corpus_gp/lengthscale"] < 10 and final["train/corpus_gp/noise"] > 0
    ctx = LocalContext(STUDY.metrics)    # no learning-curve models on other families
    train_loop(config(**{"task.family": "gp", "eval.baselines": "pow3,corpus_gp",
                         "corpus.datasets": 20}), ctx)
    assert "eval/pow3/nll" not in ctx.reports[-1] and "eval/corpus_gp/nll" in ctx.reports[-1]


def lcbench_with_shared_configs(path, datasets=3, configs=10, epochs=52):
    """LCBench's data_2k.json layout: the same config ids on every dataset, distinct curves."""
    rng = np.random.default_rng(5)
    data = {f"set{j}": {str(c): {"config": {"batch_size": 2 ** c}, "log": {
        "Train/val_accuracy": list(90 - 70 * np.exp(-rng.uniform(0.05, 0.3) * np.arange(epochs))
                                   + rng.uniform(0, 1, epochs))}} for c in range(configs)}
        for j in range(datasets)}
    path.write_text(json.dumps(data))
    return {(d, c): np.array(v["log"]["Train/val_accuracy"]) / 100
            for d, entries in data.items() for c, v in entries.items()}


@pytest.mark.parametrize("test_datasets", [0, 1])
def test_lcbench_test_curves_share_no_configuration_with_the_corpus(tmp_path, test_datasets):
    from raystudy.studies.empirical_gp.recipe import build_problem

    curves = lcbench_with_shared_configs(tmp_path / "data_2k.json")
    cfg = config(**{"task.family": "lcbench", "task.path": str(tmp_path / "data_2k.json"),
                    "task.test_datasets": test_datasets, "task.test_tasks": 4,
                    "corpus.datasets": 10})
    problem = build_problem(cfg, np.linspace(0, 1, 12))

    def owner(prefix):  # which (dataset, config) of the file a row starts like, by value
        (key,) = [k for k, v in curves.items() if np.array_equal(v[: len(prefix)], prefix)]
        return key

    test = {owner(row) for row in problem.Y}
    corpus = {owner(y.numpy()) for _, y in problem.datasets}
    assert len(test) == 4 and len(corpus) == 10
    assert not {c for _, c in test} & {c for _, c in corpus}
    if test_datasets:
        assert not {d for d, _ in test} & {d for d, _ in corpus}


def test_lcbench_corpus_larger_than_the_pool_is_refused_or_capped(tmp_path):
    from raystudy.studies.empirical_gp.recipe import build_problem

    lcbench_with_shared_configs(tmp_path / "data_2k.json", datasets=2)
    over = {"task.family": "lcbench", "task.path": str(tmp_path / "data_2k.json"),
            "task.test_tasks": 4, "corpus.datasets": 13}       # pool: 2 x (10 - 4) = 12
    with pytest.raises(DataError, match="corpus.datasets=13 exceeds the 12 curves left for the "
                                        "corpus .*; lower corpus.datasets or set "
                                        "corpus.beyond_pool=cap"):
        check_data(config(**over))
    with pytest.warns(UserWarning, match="corpus capped at 12 curves"):
        problem = build_problem(config(**over, **{"corpus.beyond_pool": "cap"}),
                                np.linspace(0, 1, 12))
    assert len(problem.datasets) == 12


def test_loop_on_an_lcbench_file(tmp_path):
    path = write_lcbench(tmp_path / "data_2k.json")
    ctx = LocalContext(STUDY.metrics)
    train_loop(config(**{"task.family": "lcbench", "task.path": str(path),
                         "task.dataset": "car", "corpus.datasets": 5}), ctx)
    final = ctx.reports[-1]
    assert np.isfinite(final["eval/nll"]) and "task/covariance_error" not in final
    assert final["train/corpus_observations"] >= 5 * 10


def test_quick_sweep_with_e_step_shards_as_ray_tasks(ray_session, tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text("params:\n  task.family: {grid: [curves, seasonal]}\n"
                     "  corpus.datasets: {grid: [20, 60]}\n")
    sets = [x for k, v in TINY.items() for x in ("--set", f"{k}={v}")]
    assert main(["sweep", "empirical_gp", "--profile", "quick", "--space", str(space),
                 "--storage", str(tmp_path / "runs"), "--name", "smoke", "--map-tasks", "2",
                 "--cpus-per-map-task", "0.5", "--cpus-per-worker", "0.5", *sets]) == 0
    run = tmp_path / "runs" / "smoke"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["counts"]["finished"] == 4
    methods = summary["analysis"]["methods"]
    assert set(methods) == {"curves", "seasonal"}
    assert {"egp S=20 M=12 none", "egp S=60 M=12 none", "base", "matern52"} <= set(
        methods["curves"])
    assert all(np.isfinite(v["nll"]) for m in methods.values() for v in m.values())
    report = (run / "report.md").read_text()
    assert set(summary["analysis"]["covariance_error"]) >= {"curves egp S=60 M=12 none"}
    for text in ("### Test NLL and RMSE", "NLL h=20", "corpus_size.png", "### Learned prior vs",
                 "covariance_curves.png", "examples_seasonal.png"):
        assert text in report, text
    for name in ("corpus_size", "covariance_curves", "covariance_seasonal", "examples_curves"):
        assert (run / "figures" / f"{name}.png").stat().st_size > 10_000


def _gp_trials(seeds: int, egp_gain: float, **settings):
    """Trials of two corpus sizes: on the headline one (S=400) EGP's NLL at h=20 is the best
    kernel's minus ``egp_gain`` (+ a seed wobble) and the strongest baseline's (corpus_gp)
    minus ``egp_gain - 0.05``; the small corpus (S=25) is much worse. ``settings`` adds
    config keys to every trial."""
    from raystudy.contract.results import TrialRecord

    trials = []
    for S in (25, 400):
        for seed in range(seeds):
            wobble = 0.01 * ((seed * 5) % 3 - 1)
            kernels = {"rbf": 1.2, "matern52": 1.0 + wobble, "spectral_mixture": 1.4, "base": 1.3,
                       "corpus_gp": 0.95 + wobble, "pow3": 1.1 - wobble}
            egp = 1.0 + wobble - egp_gain if S == 400 else 5.0
            last = {"eval/nll": egp}
            for method, nll in {"egp": egp, **kernels}.items():
                for k in ("nll", "nll_h1", "nll_h20"):
                    last[f"eval/{method}/{k}"] = nll
                for k in ("rmse", "rmse_h1", "rmse_h20"):
                    last[f"eval/{method}/{k}"] = 0.5
            config = {"task.family": "curves", "corpus.datasets": S,
                      "model.regularisation": "none", "model.reference_points": 26,
                      "train.seed": seed, **settings}
            trials.append(TrialRecord(f"t{S}-{seed}", {}, "finished", history=[last],
                                      config=config))
    return trials


@pytest.mark.parametrize("seeds, gain, verdict", [
    (6, 0.1, "supported"), (6, -0.1, "contradicted"), (2, 0.1, "inconclusive at this scale")])
def test_analyze_claims_egp_against_the_best_kernel_paired_over_seeds(tmp_path, seeds, gain,
                                                                       verdict):
    from raystudy.contract.results import RunResults
    from raystudy.studies.empirical_gp.analysis import analyze

    analysis = analyze(RunResults(tmp_path, {}, _gp_trials(seeds, gain)), tmp_path)
    kernel, strongest, competitive = [c for c in analysis.claims if c.verdict != "not run"]
    for claim, effect in ((kernel, -gain), (strongest, 0.05 - gain),
                          (competitive, 0.05 - gain)):
        assert claim.verdict == verdict and claim.n == seeds
        assert all(p.holds for p in claim.preconditions)
        assert claim.effect_size == pytest.approx(effect)      # only S=400 trials are paired
        assert "h=20" in claim.effect and "S=400" in claim.note
    assert "per-task kernel" in kernel.effect
    assert "strongest baseline is corpus_gp" in strongest.note
    table = next(t for t in analysis.tables if t.title.startswith("Claim: NLL at h=20"))
    assert len(table.rows) == seeds and {r[4] for r in table.rows} == {"matern52"}
    assert {r[6] for r in table.rows} == {"corpus_gp"}
    assert "non-inferiority (not 0.1 above)" in competitive.test


def test_a_baseline_fitted_with_fewer_steps_than_its_budget_fails_the_precondition(tmp_path):
    """Per-task kernels fitted with 10 Adam steps (the budget is 100) and the corpus GP with
    5 L-BFGS iterations (budget 50): beating an under-fitted baseline is no evidence."""
    from raystudy.contract.results import RunResults
    from raystudy.studies.empirical_gp.analysis import CLAIM, STRONGEST, analyze

    trials = _gp_trials(6, 0.1, **{"eval.baseline_steps": 10, "model.corpus_fit_steps": 5})
    claims = analyze(RunResults(tmp_path, {}, trials), tmp_path).claims
    (kernel,) = [c for c in claims if c.statement.startswith(CLAIM + " (")]
    (strongest,) = [c for c in claims if c.statement.startswith(STRONGEST)]
    assert kernel.verdict == strongest.verdict == "precondition failed"
    (failed,) = kernel.failed_preconditions
    assert failed.statement.startswith("matern52's hyperparameters were fitted with at least "
                                       "100 steps (eval.baseline_steps)")
    assert failed.evidence == "eval.baseline_steps = 10 in 6 trials"  # the headline S=400
    assert "model.corpus_fit_steps = 5" in strongest.failed_preconditions[0].evidence


def test_generated_families_are_named_stand_ins_and_real_benchmarks_are_not_run(tmp_path):
    from raystudy.contract.results import RunResults
    from raystudy.studies.empirical_gp.analysis import analyze

    claims = analyze(RunResults(tmp_path, {}, _gp_trials(3, 0.1)), tmp_path).claims
    tested = [c for c in claims if c.verdict != "not run"]
    assert len(tested) == 3
    for claim in tested:
        assert claim.scope.startswith("generated learning curves (a mixture of six parametric "
                                      "shapes over 52 epochs): a stand-in for LCBench, not "
                                      "LCBench; S = 400 corpus datasets")
        assert claim.scope.endswith("; CPU, train.threads=1")
    assert [c.scope.split(" (")[0].split(",")[0] for c in claims[3:]] == [
        "LCBench", "the paper's real time-series benchmarks"]
    assert {c.verdict for c in claims[3:]} == {"not run"}
