"""graph_transfer: config checks, missing data, the loop without Ray, and the sweep via the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from raystudy.algorithms.graph_transfer.datasets import PAPER_DATASETS
from raystudy.cli import main
from raystudy.contract.context import LocalContext
from raystudy.errors import ConfigError
from raystudy.platform.configuration.config import apply_overrides, validate
from raystudy.studies.graph_transfer import recipe
from raystudy.studies.graph_transfer.config import GraphTransferConfig
from raystudy.studies.graph_transfer.recipe import STUDY, namespaced, train_loop

STUDY_DIR = Path(recipe.__file__).parent
TINY = {"data.num_nodes": 120, "data.avg_degree": 6, "data.feature_dim": 8,
        "model.hidden": 8, "model.pe_steps": 4, "train.epochs": 12, "train.patience": 6,
        "protocol.hard_negatives": 6, "transfer.lambdas": "0.5"}


def config(**overrides) -> GraphTransferConfig:
    return validate(apply_overrides(GraphTransferConfig(), {**TINY, **overrides}))


@pytest.mark.parametrize("key,value,message", [
    ("transfer.mechanism", "warm", "'warm' is not one of nc, lp"),
    ("protocol.name", "random", "protocol.name='random' is not one of"),
    ("model.backbone", "gat", "model.backbone='gat'"),
    ("protocol.hard_negatives", "5", "even number"),
    ("transfer.lambdas", "0.5,2", "transfer.lambdas=2.0 must be <= 1"),
    ("transfer.lambdas", "", "transfer.lambdas is empty"),
    ("model.dropout", "1", "model.dropout=1.0 must be < 1"),
    ("model.attention", "flash", "model.attention='flash' is not one of auto"),
    ("train.patience", "0", "train.patience=0 must be >= 1"),
    ("data.dataset", "csbm-h2", "homophily must be in"),
    ("data.dataset", "Coraa", "'Coraa' is neither a real dataset"),
    ("protocol.contrast", "nc,bogus", "protocol.contrast='bogus' is not one of"),
])
def test_invalid_values_name_the_key(key, value, message):
    with pytest.raises(ConfigError, match=message):
        config(**{key: value})


@pytest.mark.parametrize("name,file,folder", [
    ("Cora", "ind.cora.x", "Planetoid/Cora/raw"),
    ("USA", "usa-airports.edgelist", "Airports/usa/raw"),
    ("roman-empire", "roman_empire.npz", "HeterophilousGraphDataset/roman_empire/raw")])
def test_missing_real_dataset_is_one_line_and_exit_2(name, file, folder, tmp_path, capsys):
    code = main(["run", "graph_transfer", "--set", f"data.dataset={name}",
                 "--set", f"data.root={tmp_path}", "--storage", str(tmp_path / "runs")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert f"dataset {name}: missing {file}" in err[0]
    assert str(tmp_path / folder) in err[0]


def test_paper_space_is_the_papers_eleven_datasets():
    spaces = Path(STUDY_DIR) / "spaces"
    grid = yaml.safe_load((spaces / "paper.yaml").read_text())["params"]["data.dataset"]
    assert grid["grid"] == list(PAPER_DATASETS)
    profile = yaml.safe_load((Path(STUDY_DIR) / "profiles" / "paper.yaml").read_text())
    assert profile["sweep"]["space"] == "paper"


def test_namespaced_keys():
    report = namespaced({"score": 0.7, "lp_auc": 0.7, "val_lp_auc": 0.6, "source_test": 0.8,
                         "epochs": 30.0, "lam": 0.5, "lam_0.5_select": 0.6, "nc_chance": 0.25})
    assert report == {"eval/score": 0.7, "eval/lp_auc": 0.7, "val/lp_auc": 0.6,
                      "source/test": 0.8, "train/epochs": 30.0, "joint/lam": 0.5,
                      "joint/lam_0.5_select": 0.6, "task/nc_chance": 0.25}


@pytest.mark.parametrize("backbone", ["gcn", "gps"])
def test_loop_reports_metrics_stats_and_the_leaky_contrast(backbone):
    ctx = LocalContext(STUDY.metrics)
    train_loop(config(**{"model.backbone": backbone, "transfer.mechanism": "warm_nc_lp"}), ctx)
    (report,) = ctx.reports
    assert 0 <= report["eval/score"] == report["eval/lp_auc"] <= 1
    assert 0 < report["eval/lp_mrr"] <= 1 and report["audit/leakage_free"] == 1.0
    assert 0 <= report["stats/edge_homophily"] <= 1 and report["diverged"] == 0
    assert 0 <= report["contrast/lp_auc"] <= 1 and "source/test" in report
    assert report["task/feature_snr"] == 1.0          # the SNR of the graph it built


def test_quick_sweep_through_the_cli(ray_session, tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text(
        "params:\n"
        "  data.dataset: {grid: [csbm-h0.1, csbm-h0.5, csbm-h0.9]}\n"
        "  model.backbone: {grid: [gcn, sage, gps]}\n"
        "  transfer.mechanism: {grid: [nc, lp, warm_nc_lp, joint_uw]}\n")
    sets = [x for k, v in TINY.items() for x in ("--set", f"{k}={v}")]
    assert main(["sweep", "graph_transfer", "--profile", "quick", "--space", str(space),
                 "--storage", str(tmp_path / "runs"), "--name", "smoke", *sets]) == 0
    run = tmp_path / "runs" / "smoke"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["counts"]["finished"] == 36
    analysis = summary["analysis"]
    assert "homophily" in analysis["verdict_nc_to_lp"]
    assert {"gcn|lp", "sage|nc", "gps|lp"} <= set(analysis["recommendation"])
    assert len([k for k in analysis["gains"] if k.endswith("|warm_nc_lp")]) == 9
    assert len(analysis["cts"]) == 9
    assert "leaky_minus_free_nc_to_lp_gain" in analysis
    report = (run / "report.md").read_text()
    for text in ("### Transfer gain over the single-task baseline", "### CoTask Score",
                 "### Leave-one-dataset-out accuracy", "### Leakage-free vs RandomLinkSplit",
                 "### Recommended mechanism per dataset", "NC->LP (warm start)"):
        assert text in report
    for name in ("gain_heatmaps.png", "gain_vs_homophily.png", "cts.png", "protocols.png"):
        assert (run / "figures" / name).stat().st_size > 10_000


def _paired_trials(graphs, baseline: str, transfer: str, metric: str, seeds: int = 2):
    """Finished ``baseline`` and ``transfer`` trials: per graph (dataset, base, gain,
    extra report keys), transfer = baseline + gain + a small deterministic noise."""
    from raystudy.contract.results import TrialRecord

    trials = []
    for i, (dataset, base, gain, extra) in enumerate(graphs):
        for seed in range(seeds):
            value = base + 0.01 * seed
            noise = 0.002 * ((i * 7 + seed * 3) % 5 - 2)
            for mech, m in ((baseline, value), (transfer, value + gain + noise)):
                config = {"protocol.name": "leakage_free", "data.dataset": dataset,
                          "model.backbone": "gcn", "transfer.mechanism": mech,
                          "train.seed": seed}
                trials.append(TrialRecord(f"{mech}-{dataset}-{seed}", {}, "finished",
                                          config=config,
                                          history=[{f"eval/{metric}": m, **extra}]))
    return trials


def _trials(slope: float, seeds: int = 2):
    """lp and warm_nc_lp on 5 graphs: gain = slope * (h - 0.5) + noise."""
    return _paired_trials([(f"csbm-h{h}", 0.7, slope * (h - 0.5), {"stats/edge_homophily": h})
                           for h in (0.1, 0.3, 0.5, 0.7, 0.9)], "lp", "warm_nc_lp", "lp_auc",
                          seeds)


@pytest.mark.parametrize("slope, verdict", [(0.2, "supported"), (-0.2, "contradicted"),
                                            (0.0, "inconclusive at this scale")])
def test_analyze_claims_the_homophily_slope_over_five_graphs(tmp_path, slope, verdict):
    from raystudy.contract.results import RunResults
    from raystudy.studies.graph_transfer.analysis import analyze

    analysis = analyze(RunResults(tmp_path, {}, _trials(slope)), tmp_path)
    claim = analysis.claims[0]
    assert claim.n == 5 and claim.verdict == verdict
    assert "5 cluster means (10 runs)" in claim.test and "3 df" in claim.test
    assert claim.effect_size == pytest.approx(slope, abs=0.02)
    assert [p.holds for p in claim.preconditions] == [True, True]
    assert "edge homophily 0.10 .. 0.90 over 5 graphs" in claim.preconditions[0].evidence
    empty = analyze(RunResults(tmp_path, {}, []), tmp_path)
    assert empty.claims[0].verdict == "inconclusive at this scale"


def _snr_trials(slope: float, nc_at_lowest: float = 0.5, lp_auc: float = 0.74):
    """nc and warm_lp_nc on 5 graphs of feature SNR s = 0.5 .. 2.5, one homophily:
    NC gain = slope * (s - 1.5) + noise, NC accuracy ``nc_at_lowest`` at s = 0.5 (0.2 more
    per unit of s), chance 0.25; and an LP baseline of ROC-AUC ``lp_auc`` on each graph."""
    from raystudy.contract.results import TrialRecord

    graphs = [(f"csbm-h0.5-s{s}", nc_at_lowest + 0.2 * (s - 0.5), slope * (s - 1.5),
               {"task/feature_snr": s, "stats/edge_homophily": 0.5, "task/nc_chance": 0.25})
              for s in (0.5, 1.0, 1.5, 2.0, 2.5)]
    lp = [TrialRecord(f"lp-{dataset}-{seed}", {}, "finished",
                      config={"protocol.name": "leakage_free", "data.dataset": dataset,
                              "model.backbone": "gcn", "transfer.mechanism": "lp",
                              "train.seed": seed},
                      history=[{"eval/lp_auc": lp_auc, **extra}])
          for dataset, _, _, extra in graphs for seed in range(2)]
    return _paired_trials(graphs, "nc", "warm_lp_nc", "nc_acc") + lp


@pytest.mark.parametrize("slope, verdict", [(-0.05, "supported"), (0.05, "contradicted"),
                                            (0.0, "inconclusive at this scale")])
def test_analyze_claims_the_lp_to_nc_gain_falls_with_feature_snr(tmp_path, slope, verdict):
    from raystudy.contract.results import RunResults
    from raystudy.studies.graph_transfer.analysis import SNR_CLAIM, analyze

    analysis = analyze(RunResults(tmp_path, {}, _snr_trials(slope)), tmp_path)
    homophily, level, snr = [c for c in analysis.claims if c.verdict != "not run"]
    assert homophily.verdict == "inconclusive at this scale"    # no warm_nc_lp: no slope
    assert level.verdict == "inconclusive at this scale"        # nor a level
    assert snr.statement == SNR_CLAIM and snr.n == 5 and snr.verdict == verdict
    assert [p.holds for p in snr.preconditions] == [True, True, True]
    assert "5 cluster means (10 runs)" in snr.test
    assert snr.effect_size == pytest.approx(slope, abs=0.005)
    table = next(t for t in analysis.tables if "feature SNR" in t.title)
    assert [row[1] for row in table.rows] == [0.5, 1.0, 1.5, 2.0, 2.5]
    assert table.rows[0][2] == pytest.approx(0.505)            # NC acc single at s = 0.5
    assert table.rows[0][3] == pytest.approx(0.74)             # LP AUC single


def test_a_gain_over_an_lp_baseline_at_chance_fails_the_precondition(tmp_path):
    """The LP baseline at ROC-AUC 0.52 on one graph: the homophily slope reads
    "precondition failed", with the interval still shown."""
    from raystudy.contract.results import RunResults
    from raystudy.studies.graph_transfer.analysis import CLAIM, analyze

    graphs = [(f"csbm-h{h}", 0.52 if h == 0.3 else 0.7, 0.2 * (h - 0.5),
               {"stats/edge_homophily": h}) for h in (0.1, 0.3, 0.5, 0.7, 0.9)]
    trials = _paired_trials(graphs, "lp", "warm_nc_lp", "lp_auc")
    claim = analyze(RunResults(tmp_path, {}, trials), tmp_path).claims[0]
    assert claim.statement == CLAIM and claim.verdict == "precondition failed"
    (failed,) = claim.failed_preconditions
    assert "LP baseline learns" in failed.statement and "(csbm-h0.3)" in failed.evidence
    assert claim.ci_low > 0 and "without it the interval reads 'supported'" in claim.note


def test_the_snr_slope_outside_the_papers_regime_fails_the_precondition(tmp_path):
    """NC saturated at the lowest SNR (0.92) and LP hard (ROC-AUC 0.62): not the regime
    where the paper says LP->NC helps."""
    from raystudy.contract.results import RunResults
    from raystudy.studies.graph_transfer.analysis import SNR_CLAIM, analyze

    trials = _snr_trials(-0.05, nc_at_lowest=0.92, lp_auc=0.62)
    (snr,) = [c for c in analyze(RunResults(tmp_path, {}, trials), tmp_path).claims
              if c.statement == SNR_CLAIM]
    assert snr.verdict == "precondition failed"
    assert [p.statement.split(":")[0] for p in snr.failed_preconditions] == [
        "LP is easy at every feature SNR", "NC is unsaturated at the lowest SNR"]
    assert "NC accuracy 0.9" in snr.failed_preconditions[1].evidence


def test_homophilous_graphs_read_the_level_and_the_papers_datasets_are_not_run(tmp_path):
    """The abstract's "consistently beneficial on homophilic graphs": one row per graph of
    edge homophily >= 0.5; every claim names the generated CSBMs as stand-ins; each of the
    paper's 11 real datasets is a row *not run*, after the tested rows."""
    from raystudy.algorithms.graph_transfer.datasets import PAPER_DATASETS
    from raystudy.contract.results import RunResults
    from raystudy.studies.graph_transfer.analysis import HOMOPHILOUS_CLAIM, analyze

    found = analyze(RunResults(tmp_path, {}, _trials(0.2, seeds=7)), tmp_path).claims
    level = [c for c in found if c.statement.startswith(HOMOPHILOUS_CLAIM)]
    assert [c.statement.split("(")[-1] for c in level] == [
        "csbm-h0.5, edge homophily 0.50)", "csbm-h0.7, edge homophily 0.70)",
        "csbm-h0.9, edge homophily 0.90)"]
    assert [c.verdict for c in level] == ["inconclusive at this scale", "supported",
                                          "supported"]          # gain 0 at h = 0.5
    tested = [c for c in found if c.verdict != "not run"]
    for claim in tested:
        assert "generated contextual SBM graphs" in claim.scope
        assert "stand-ins for the paper's real graphs, not them" in claim.scope
    not_run = found[len(tested):]
    assert [c.scope.split(",")[0] for c in not_run] == list(PAPER_DATASETS)
    assert {c.verdict for c in not_run} == {"not run"}
