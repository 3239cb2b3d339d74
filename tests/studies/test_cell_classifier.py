"""cell_classifier: config checks without Ray, and the quick sweep through the CLI."""

from __future__ import annotations

import json
import math

import pytest

from raystudy.cli import main
from raystudy.errors import ConfigError, DataError
from raystudy.platform.configuration.config import apply_overrides, validate
from raystudy.studies.cell_classifier.config import CellClassifierConfig, parse_loader
from raystudy.studies.cell_classifier.recipe import data_files

TINY = ["data.cells=1600", "data.genes=24", "data.plates=2", "data.cell_lines=4",
        "data.val_cells=200", "model.hidden=16", "train.eval_every=20"]


def test_parse_loader():
    assert parse_loader("random") == ("random", 1, 1)
    assert parse_loader("streaming/16") == ("streaming", 0, 16)
    assert parse_loader("block/16/256") == ("block", 16, 256)
    for bad in ("block/16", "block/0/4", "stream/4", "block/a/4", "block/1.5/4", "random+random"):
        with pytest.raises(ValueError, match="random, streaming/F or block/B/F"):
            parse_loader(bad)
    with pytest.raises(ConfigError, match="sampling.loader='block//4': empty term"):
        parse_loader("block//4")


def test_missing_data_is_one_clear_error(tmp_path):
    def files(path: str):
        return data_files(apply_overrides(CellClassifierConfig(), {"data.path": path}).data)

    with pytest.raises(DataError, match="no such file or folder"):
        files("/nowhere/plates")
    with pytest.raises(DataError, match="no .h5ad files"):
        files(str(tmp_path))
    with pytest.raises(DataError, match="no such file /nowhere/a.h5ad"):
        files("/nowhere/a.h5ad,/nowhere/b.h5ad")


def test_bad_config_values_are_config_errors():
    with pytest.raises(ConfigError, match="sampling.loader='block/4'"):
        validate(apply_overrides(CellClassifierConfig(), {"sampling.loader": "block/4"}))
    for key, value, message in (("data.read_cpus", -1, "data.read_cpus=-1.0 must be >= 0"),
                                ("train.batch_size", 0, "train.batch_size=0 must be >= 1"),
                                ("train.lr", "inf", "train.lr=inf must be a finite number"),
                                ("sampling.output", "coo",
                                 "sampling.output='coo' is not one of csr, dense")):
        with pytest.raises(ConfigError, match=message):
            validate(apply_overrides(CellClassifierConfig(), {key: value}))


def test_make_anndata_cli(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:  # refused by argparse, in one line
        main(["data", "make-anndata", str(tmp_path / "bad"), "--cells", "0", "--genes", "5"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2 and len(err) == 1
    assert err[0].startswith("raystudy: error: argument --cells: 0 must be >= 1")
    assert main(["data", "make-anndata", str(tmp_path / "bad"), "--cells", "2", "--plates",
                 "3", "--genes", "5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("raystudy: error: make-anndata needs")
    assert main(["data", "make-anndata", str(tmp_path / "ok"), "--cells", "300", "--genes",
                 "8", "--plates", "3", "--density", "0.2", "--seed", "1"]) == 0
    assert sorted(p.name for p in (tmp_path / "ok").iterdir()) == [
        "plate00.h5ad", "plate01.h5ad", "plate02.h5ad"]


def test_quick_sweep_reports_each_loader(ray_session, tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text("params:\n  sampling.loader: {grid: [random, streaming/4, block/4/4]}\n")
    sets = [x for kv in [*TINY, f"data.cache_dir={tmp_path / 'cache'}"] for x in ("--set", kv)]
    assert main(["sweep", "cell_classifier", "--profile", "quick", "--space", str(space),
                 "--storage", str(tmp_path / "runs"), "--name", "smoke", *sets]) == 0
    run = tmp_path / "runs" / "smoke"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["counts"]["finished"] == 3
    loaders = summary["analysis"]["loaders"]
    assert set(loaders) == {"random", "streaming/4", "block/4/4"}
    for values in loaders.values():
        assert values["train/cells_per_s"] > 0 and values["data/cells_per_s"] > 0
        assert 0 <= values["eval/accuracy"] <= 1
    assert loaders["streaming/4"]["train/plate_entropy"] < 0.1
    assert loaders["block/4/4"]["train/plate_entropy"] > 0.5
    report = (run / "report.md").read_text()
    for text in ("### Loaders", "plate entropy", "loader cells/s", "accuracy", "loaders.png"):
        assert text in report
    assert (run / "figures" / "loaders.png").stat().st_size > 0


def _loader_results(seeds: int, speedup: float = 3.0, random_accuracy: float = 0.75,
                    request: dict | None = None, **config):
    """Finished trials of random, two block loaders and streaming on ``seeds`` seeds: block
    loaders ``speedup`` times random's throughput, 0.005 below its accuracy and 0.02 bits
    below its plate entropy; streaming at 0.12 accuracy. 16 cell lines (chance 1/16)."""
    from raystudy.contract.results import RunResults, TrialRecord

    trials = []
    for seed in range(seeds):
        jitter = 0.001 * ((seed * 3) % 5)
        for loader, rate, accuracy, entropy in (
                ("random", 1000.0 + seed, random_accuracy + jitter, 1.96 + jitter),
                ("block/4/16", speedup * 1000 + seed, random_accuracy - 0.005, 1.94),
                ("block/16/16", speedup * 1100 + seed, random_accuracy - 0.004, 1.93),
                ("streaming/16", 20000.0 + seed, 0.12 + jitter, 0.005)):
            last = {"eval/accuracy": accuracy, "train/cells_per_s": rate,
                    "data/cells_per_s": rate, "train/plate_entropy": entropy,
                    "train/random_plate_entropy": 1.965, "data/classes": 16}
            trials.append(TrialRecord(f"{loader}-{seed}", {}, "finished", history=[last],
                                      config={"sampling.loader": loader, "train.seed": seed,
                                              **config}))
    return RunResults(None, {"max_concurrent": 1} if request is None else request, trials)


def _rows(claims, statement: str):
    return [c for c in claims if c.statement.startswith(statement)]


@pytest.mark.parametrize("seeds, speedup, verdict", [
    (7, 3.0, "supported"), (7, 0.5, "contradicted"), (2, 3.0, "inconclusive at this scale")])
def test_the_throughput_claim_is_paired_over_seeds_with_holm(tmp_path, seeds, speedup,
                                                             verdict):
    from raystudy.studies.cell_classifier.analysis import THROUGHPUT_CLAIM, analyze

    claims = _rows(analyze(_loader_results(seeds, speedup), tmp_path).claims, THROUGHPUT_CLAIM)
    assert [c.statement.split("(")[-1] for c in claims] == ["block/16/16)", "block/4/16)"]
    for claim in claims:
        assert claim.verdict == verdict and claim.n == seeds
        assert "Holm-adjusted p over 2 block loaders" in claim.test
        assert [p.holds for p in claim.preconditions] == [True]
    assert claims[1].effect_size == pytest.approx(math.log10(speedup), abs=0.01)


def test_throughputs_of_trials_run_side_by_side_fail_the_precondition(tmp_path):
    """Without --max-concurrent 1 two loaders shared the CPUs while timed: the throughput
    rows read "precondition failed" (the interval is still shown); accuracy rows do not."""
    from raystudy.studies.cell_classifier.analysis import (
        ACCURACY_CLAIM,
        THROUGHPUT_CLAIM,
        analyze,
    )

    claims = analyze(_loader_results(7, request={"max_concurrent": 2}), tmp_path).claims
    throughput = _rows(claims, THROUGHPUT_CLAIM)
    assert {c.verdict for c in throughput} == {"precondition failed"}
    (failed,) = throughput[0].failed_preconditions
    assert "one at a time" in failed.statement and "max_concurrent 2" in failed.evidence
    assert throughput[0].ci_low > 0 and "without it the interval reads 'supported'" in \
        throughput[0].note
    assert {c.verdict for c in _rows(claims, ACCURACY_CLAIM)} == {"supported"}


def test_accuracy_diversity_and_streaming_readings(tmp_path):
    from raystudy.studies.cell_classifier.analysis import (
        ACCURACY_CLAIM,
        DIVERSITY_CLAIM,
        STREAMING_CLAIM,
        analyze,
    )

    claims = analyze(_loader_results(7), tmp_path).claims
    accuracy = _rows(claims, ACCURACY_CLAIM)
    assert [c.verdict for c in accuracy] == ["supported", "supported"]
    assert "non-inferiority (not 0.02 below)" in accuracy[0].test
    assert [c.verdict for c in _rows(claims, DIVERSITY_CLAIM)] == ["supported", "supported"]
    (streaming,) = _rows(claims, STREAMING_CLAIM)
    assert streaming.verdict == "supported" and streaming.effect_size < -0.5


def test_accuracy_read_only_when_random_learns_above_chance(tmp_path):
    """Random's classifier at chance (1/16 + 0.01): nothing to keep, so "as well as random"
    and "streaming loses accuracy" read "precondition failed"."""
    from raystudy.studies.cell_classifier.analysis import (
        ACCURACY_CLAIM,
        STREAMING_CLAIM,
        analyze,
    )

    claims = analyze(_loader_results(7, random_accuracy=1 / 16 + 0.01), tmp_path).claims
    for row in _rows(claims, ACCURACY_CLAIM) + _rows(claims, STREAMING_CLAIM):
        assert row.verdict == "precondition failed"
        (failed,) = row.failed_preconditions
        assert "above chance" in failed.statement and "chance 0.062" in failed.evidence


def test_every_claim_names_the_generated_stand_in_and_hardware_and_regimes_not_run(tmp_path):
    from raystudy.studies.cell_classifier.analysis import TAHOE, analyze

    claims = analyze(_loader_results(3, **{"train.threads": 1}), tmp_path).claims
    tested = [c for c in claims if c.verdict != "not run"]
    assert len(tested) == 7
    for claim in tested:
        assert "a stand-in for Tahoe-100M, not Tahoe-100M" in claim.scope
        assert "CPU, train.threads=1, trials one at a time" in claim.scope
    assert [c.scope for c in claims[len(tested):]] == [TAHOE, "CUDA GPUs, 4 workers per trial"]
    placed = analyze(_loader_results(3, request={"max_concurrent": 1, "compute": {
        "gpus_per_worker": 1}}, **{"data.path": "/data/tahoe"}), tmp_path).claims
    assert not [c for c in placed if c.verdict == "not run"]
    assert ".h5ad files at /data/tahoe" in placed[0].scope and "GPU" in placed[0].scope
