"""The two-sample study: the Monte Carlo loop without Ray (reports and p-value CDFs,
resume, the map fan-out), its config errors, the data command and the file scenario, the
claims on hand-built trials (the size gate on every power verdict, size-adjusted power,
scopes, not-run rows), and a shrunk quick sweep through the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from raystudy import LocalContext
from raystudy.algorithms.two_sample import read_table
from raystudy.cli import main
from raystudy.contract.results import RunResults, TrialRecord
from raystudy.errors import ConfigError, DataError, MissingDataError
from raystudy.platform.configuration.config import apply_overrides, validate
from raystudy.studies.compositional_two_sample.analysis import (
    PVALUE_LEVELS,
    QQ_LEVELS,
    all_claims,
    analyze,
    collect,
    pvalue_cdf_key,
)
from raystudy.studies.compositional_two_sample.config import TwoSampleConfig
from raystudy.studies.compositional_two_sample.recipe import (
    STUDY,
    check_data,
    train_loop,
)

STUDY_NAME = "compositional_two_sample"
TINY = {"data.n": 12, "mc.reps": 12, "mc.batches": 3, "baselines.permutations": 19}
COMPOSITIONAL = ("harmonic_cross", "harmonic_full", "energy_perm", "mmd_perm", "cross_mmd",
                 "hotelling_ilr", "james_ilr", "cao_lin_li", "dirichlet_lrt")


def config(**overrides) -> TwoSampleConfig:
    return validate(apply_overrides(TwoSampleConfig(), {**TINY, **overrides}))


def run(cfg: TwoSampleConfig, checkpoint=None, **context) -> LocalContext:
    ctx = LocalContext(STUDY.metrics, checkpoint=checkpoint, **context)
    train_loop(cfg, ctx)
    return ctx


# ----------------------------------------------------------------------------- the loop
def test_a_null_trial_reports_every_batch_every_method_and_the_null_distribution():
    ctx = run(config())
    assert [r["mc/batch"] for r in ctx.reports] == [1, 2, 3]
    last = ctx.reports[-1]
    rates = [r["batch/reject/harmonic_cross"] for r in ctx.reports]
    assert last["eval/reject"] == pytest.approx(np.mean(rates))
    assert last["mc/replicates"] == 36 and last["diverged"] == 0
    for method in COMPOSITIONAL:
        assert 0 <= last[f"batch/reject/{method}"] <= 1
        assert last[f"batch/time_ms/{method}"] > 0
    assert "batch/reject/mean_direction" not in last  # a directional test: not applicable
    statistics = ctx.last_checkpoint["statistics"]["harmonic_cross"]
    assert statistics.shape == (36,)
    from scipy import stats

    assert last["eval/ks"] == pytest.approx(stats.kstest(statistics, "norm").statistic)
    assert last["null/harmonic_full/q0.5"] == pytest.approx(
        np.median(ctx.last_checkpoint["statistics"]["harmonic_full"]))
    assert all(f"null/harmonic_cross/q{p:g}" in last for p in QQ_LEVELS)
    assert all(pvalue_cdf_key(m, M) in last for m in COMPOSITIONAL for M in PVALUE_LEVELS)


def test_a_batch_is_the_librarys_run_batch_and_reports_each_methods_p_value_cdf():
    """The loop's batch draws and rejects as ``run_batch`` does (the existing metrics do not
    change); the p-value CDF it adds passes through the rejection rate at 1 alpha."""
    from raystudy.algorithms.two_sample import run_batch
    from raystudy.studies.compositional_two_sample.recipe import (
        batch_seed,
        monte_carlo_batch,
        plan_of,
    )

    cfg = config(**{"data.scenario": "mixture/0.5", "data.n": 30, "mc.reps": 60})
    plan, seed = plan_of(cfg), batch_seed(cfg, 1)
    ours = monte_carlo_batch(plan, seed)
    library = run_batch(plan.scenario, reps=plan.reps, seed=seed, methods=plan.methods,
                        degree=plan.degree, distance=plan.distance, alpha=plan.alpha,
                        permutations=plan.permutations)
    assert ours["reject"] == library.rejection_rate()
    assert 0 < ours["reject"]["hotelling_ilr"] < ours["reject"]["harmonic_full"] < 1
    for method, statistics in library.statistics.items():
        assert np.array_equal(ours["statistics"][method], statistics)
    last = run(cfg).reports[-1]
    at_alpha = PVALUE_LEVELS.index(1.0)
    for method in plan.methods:
        cdf = [last[pvalue_cdf_key(method, M)] for M in PVALUE_LEVELS]
        assert cdf[at_alpha] == last[f"batch/reject/{method}"], method
        assert cdf == sorted(cdf), method


def test_an_alternative_reports_power_and_no_null_statistics():
    ctx = run(config(**{"data.scenario": "concentration/3.0", "data.n": 40,
                        "harmonic.studentize": "full", "baselines.methods": "hotelling_ilr"}))
    last = ctx.reports[-1]
    assert "eval/ks" not in last and not any(k.startswith("null/") for k in last)
    assert {k.removeprefix("batch/reject/") for k in last if k.startswith("batch/reject/")} \
        == {"harmonic_full", "hotelling_ilr"}
    assert last["eval/reject"] == last["eval/reject/harmonic_full"] > 0.5  # 4x concentration


def test_directional_data_run_the_mean_direction_test_not_the_log_ratio_tests():
    last = run(config(**{"data.scenario": "vmf/0.5", "data.D": 4})).reports[-1]
    assert "batch/reject/mean_direction" in last and "batch/reject/hotelling_ilr" not in last


def test_a_resumed_trial_continues_at_the_next_batch_with_the_same_replicates():
    full = run(config(**{"mc.batches": 4}))
    first_leg = run(config(**{"mc.batches": 2}))
    resumed = run(config(**{"mc.batches": 4}), checkpoint=first_leg.last_checkpoint)
    assert [r["mc/batch"] for r in resumed.reports] == [3, 4]
    for a, b in zip(full.reports[2:], resumed.reports, strict=True):
        for key in ("batch/reject/harmonic_cross", "batch/reject/energy_perm", "eval/reject",
                    "eval/ks", "null/harmonic_full/sd"):
            assert a[key] == pytest.approx(b[key], rel=1e-12), key
    assert resumed.last_checkpoint["statistics"]["harmonic_cross"].shape == (48,)


class RecordingContext(LocalContext):
    """A LocalContext with two map slots that records what each ``map`` call got."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, map_tasks=2, **kwargs)
        self.rounds: list[int] = []

    def map(self, fn, items):
        items = list(items)
        self.rounds.append(len(items))
        return super().map(fn, items)


def test_batches_go_to_ctx_map_one_round_per_slot_and_give_the_same_results():
    ctx = RecordingContext(STUDY.metrics)
    train_loop(config(**{"mc.batches": 5}), ctx)
    assert ctx.rounds == [2, 2, 1]
    alone = run(config(**{"mc.batches": 5}))
    assert [r["batch/reject/mmd_perm"] for r in ctx.reports] == \
        [r["batch/reject/mmd_perm"] for r in alone.reports]


def test_configurations_never_share_replicates_but_degrees_do():
    def cross(**kw):
        return [r["batch/reject/energy_perm"] for r in run(config(**kw)).reports]

    same = cross(**{"harmonic.degree": 3})
    assert same == cross()                         # the baselines see the same replicates
    from raystudy.studies.compositional_two_sample.recipe import batch_seed

    seeds = {batch_seed(config(**kw), 1) for kw in ({}, {"data.n": 13}, {"data.D": 4},
                                                    {"mc.seed": 1})}
    assert len(seeds) == 4


@pytest.mark.parametrize("overrides, message", [
    ({"data.scenario": "dirichlet/0.5"}, "data.scenario=dirichlet/0.5: the dirichlet family "
                                         "is a null"),
    ({"data.scenario": "nosuch/1"}, "expected family or family/effect"),
    ({"data.scenario": "mixture/1.5"}, "needs effect in"),
    ({"data.scenario": "file/1"}, "needs a path"),
    ({"data.n": 3}, "data.n=3 must be >= 4"),
    ({"harmonic.studentize": "cross,cross"}, "names a studentization twice"),
    ({"data.groups": "a,b,c"}, "name exactly two groups"),
    ({"data.scenario": "zeros/1", "data.D": 20, "data.depth": 10}, "too low for D=20"),
])
def test_bad_config_values_are_one_line(overrides, message):
    with pytest.raises(ConfigError, match=message) as err:
        config(**overrides)
    assert "\n" not in str(err.value)


def test_a_bad_value_on_the_command_line_is_one_line_and_exit_2(capsys):
    assert main(["run", STUDY_NAME, "--in-process", "--set", "data.scenario=shape/1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "shape family needs effect in [0, 1)" in err


def test_run_in_process_through_the_cli_writes_a_report(tmp_path):
    assert main(["run", STUDY_NAME, "--in-process", "--storage", str(tmp_path), "--name", "r",
                 *(x for k, v in TINY.items() for x in ("--set", f"{k}={v}"))]) == 0
    report = (tmp_path / "r" / "report.md").read_text()
    assert "size within +-0.02 of alpha at every null configuration" in report
    assert (tmp_path / "r" / "figures" / "qq.png").stat().st_size > 10_000


# ----------------------------------------------------------------------------- data
@pytest.mark.parametrize("name, delimiter", [("counts.tsv", "\t"), ("counts.csv", ",")])
def test_make_compositions_writes_a_table_the_reader_reads(tmp_path, name, delimiter):
    path = tmp_path / "sub" / name
    assert main(["data", "make-compositions", str(path), "--rows", "12", "--parts", "4",
                 "--depth", "30"]) == 0
    header = path.read_text().splitlines()[0]
    assert header == delimiter.join(["group", "taxon_1", "taxon_2", "taxon_3", "taxon_4"])
    table = read_table(path, "group")
    assert table.groups == ("control", "treated")
    assert table.x.shape == table.y.shape == (12, 4)
    assert np.allclose(table.x.sum(1), 1)
    counts = np.loadtxt(path, delimiter=delimiter, skiprows=1, usecols=range(1, 5))
    assert (counts.sum(1) == 30).all() and (counts == np.round(counts)).all()


def test_make_compositions_errors_are_one_line_and_exit_2(tmp_path, capsys):
    assert main(["data", "make-compositions", str(tmp_path), "--rows", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is a folder; name the table file" in err
    with pytest.raises(SystemExit) as exit_:
        main(["data", "make-compositions", str(tmp_path / "t.csv"), "--rows", "1"])
    assert exit_.value.code == 2
    assert "--rows: 1 must be >= 2" in capsys.readouterr().err


def test_the_file_scenario_reads_the_table_and_check_data_names_problems(tmp_path):
    path = tmp_path / "counts.tsv"
    assert main(["data", "make-compositions", str(path), "--rows", "30", "--parts", "5",
                 "--concentration", "4"]) == 0
    cfg = config(**{"data.scenario": "file/1", "data.path": str(path), "data.n": 30})
    check_data(cfg)
    last = run(cfg).reports[-1]
    assert last["eval/reject/harmonic_cross"] > 0.3   # 5x concentration, 30 per group
    with pytest.raises(MissingDataError, match="no composition table at"):
        check_data(config(**{"data.scenario": "file/0", "data.path": str(tmp_path / "no.csv")}))
    bad = tmp_path / "bad.csv"
    bad.write_text("group,a,b\nx,1,2\ny,3,-1\n")
    with pytest.raises(DataError, match="negative"):
        check_data(config(**{"data.scenario": "file/0", "data.path": str(bad)}))


# ----------------------------------------------------------------------------- analysis
ALL_BASELINES = ("energy_perm", "mmd_perm", "cross_mmd", "hotelling_ilr", "james_ilr",
                 "cao_lin_li", "dirichlet_lrt")
NULL_SHAPE, ALTERNATIVE_SHAPE = 1.0, 0.5


def cdf_row(rate: float, shape: float) -> list[float]:
    """A batch's p-value CDF at PVALUE_LEVELS x alpha through its rejection rate at M = 1:
    min(1, rate M^shape) (shape 1: a null's p-values, uniform scaled by size / alpha)."""
    return [min(1.0, rate * M ** shape) for M in PVALUE_LEVELS]


def trial(tid: str, scenario: str, n: int, rates: dict[str, list[float]],
          ms: dict[str, float] | None = None, ks: float | None = None,
          **settings) -> TrialRecord:
    """A finished trial whose batch b reports ``rates[method][b]`` and a p-value CDF
    through it (and, at a null, the final KS of each harmonic method); ``settings``
    override config keys."""
    ms = ms or {}
    shape = ALTERNATIVE_SHAPE if "/" in scenario else NULL_SHAPE
    history = []
    batches = len(next(iter(rates.values())))
    for b in range(batches):
        row = {"mc/batch": b + 1}
        for method, values in rates.items():
            row[f"batch/reject/{method}"] = values[b]
            row[f"batch/time_ms/{method}"] = ms.get(method, 1.0)
            for M, fraction in zip(PVALUE_LEVELS, cdf_row(values[b], shape), strict=True):
                row[pvalue_cdf_key(method, M)] = fraction
        history.append(row)
    if ks is not None:
        history[-1].update({f"eval/ks/{m}": ks for m in rates if m.startswith("harmonic_")})
        history[-1].update({f"null/{m}/q{p:g}": float(p) for m in rates
                            if m.startswith("harmonic_") for p in QQ_LEVELS})
    history.append(dict(history[-1]))  # a resumed trial reports its last batch twice
    cfg = {"data.scenario": scenario, "data.n": n, "data.m_ratio": 1.0, "data.D": 3,
           "harmonic.degree": 10, "harmonic.distance": "chordal", "mc.alpha": 0.05,
           "mc.reps": 100, "baselines.permutations": 99, **settings}
    return TrialRecord(tid, {}, "finished", history=history, config=cfg)


B = 10
WOBBLE = [0.01 * ((3 * b) % 5 - 2) for b in range(B)]   # -0.02 .. 0.02, mean 0
ALTERNATIVES = (("concentration/1.0", 25), ("concentration/1.0", 100), ("mixture/0.3", 25))
"""Same-mean alternatives of 5 batches each: 15 pooled batches, so the sign-flip tests
enumerate their 2^15 patterns (exact, fast) and a one-sided test per alternative can still
reach 1/32."""


def hand_built(null_size: float, power_gap: float, energy_gap: float,
               null_baselines: tuple[str, ...] = ALL_BASELINES, ks_drop: float = 0.05,
               ks_start: float = 0.2) -> RunResults:
    """Null trials at three n, sized ``null_size`` for harmonic_cross (the baselines at
    0.05), KS falling by ``ks_drop`` per n; same-mean alternatives where harmonic_cross
    has ``energy_gap`` over energy_perm and ``power_gap`` over every other baseline, 10x
    faster than energy_perm."""
    trials = []
    for i, n in enumerate((25, 50, 100)):
        rates = {"harmonic_cross": [null_size + 0.5 * w for w in WOBBLE],
                 **{m: [0.05 + 0.5 * w for w in WOBBLE] for m in null_baselines}}
        trials.append(trial(f"null{n}", "dirichlet", n, rates,
                            ks=ks_start - ks_drop * i + 0.001 * (i == 1)))
    for family, n in ALTERNATIVES:
        h = [0.6 + w for w in WOBBLE[:5]]
        rates = {"harmonic_cross": h, "energy_perm": [x - energy_gap for x in h],
                 **{m: [x - power_gap - 0.01 * (m == "cao_lin_li") for x in h]
                    for m in ALL_BASELINES if m != "energy_perm"}}
        trials.append(trial(f"{family}{n}", family, n, rates,
                            ms={"harmonic_cross": 1.0, "energy_perm": 10.0}))
    return RunResults(run_dir=None, request={}, trials=trials)  # type: ignore[arg-type]


def claims_of(results: RunResults) -> list:
    """The claims ``analyze`` reads from ``results``, without drawing its figures."""
    return all_claims(collect(results))


def _tested(claims: list) -> list:
    return [c for c in claims if c.verdict != "not run"]


def verdicts(claims: list) -> dict[str, str]:
    return {c.statement.split(": ", 1)[1]: c.verdict for c in _tested(claims)}


def by_statement(claims: list) -> dict[str, object]:
    return {c.statement.split(": ", 1)[1]: c for c in _tested(claims)}


NOT_RUN = ("size, normality and power on directional data",
           "the test on real compositional data",
           "size, normality and power at the paper profile's scale")


def test_analyze_supports_every_claim_when_the_batches_say_so(tmp_path):
    analysis = analyze(hand_built(null_size=0.05, power_gap=0.5, energy_gap=0.1), tmp_path)
    got = verdicts(analysis.claims)
    assert set(got.values()) == {"supported"}, got
    assert len(got) == 11   # size, KS, 7 baselines, non-inferiority, time
    assert not any("size-adjusted" in s for s in got)  # sized exactly: the same reading
    size = analysis.claims[0]
    assert size.n == B and "binding" in size.effect and "3 of 3 supported" in size.note
    power = by_statement(analysis.claims)["more power than hotelling_ilr on the same-mean "
                                          "alternatives"]
    assert power.effect_size == pytest.approx(0.5) and "Holm" in power.test
    assert "7 tests" in power.test and "the seed abstract's comparators" in power.note
    assert {p.statement.split(" ", 1)[0] for p in power.preconditions} == \
        {"harmonic_cross", "hotelling_ilr"}
    assert all(p.holds for p in power.preconditions)
    for name in ("size_vs_n", "power_D3", "qq", "time_per_test"):
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    titles = [t.title for t in analysis.tables]
    assert any(t.startswith("Size at the null") for t in titles)
    assert any(t.startswith("Size-adjusted power per alternative") for t in titles)
    rates = analysis.summary["rates"]["dirichlet n=25 m=25 D=3 L=10"]
    assert rates["harmonic_cross"] == pytest.approx(0.05)
    adjusted = analysis.summary["size_adjusted"]["concentration/1.0 n=25 m=25 D=3 L=10"]
    assert adjusted["harmonic_cross"] == pytest.approx(0.6)   # sized exactly: nominal


def test_an_oversized_test_gates_every_power_verdict_and_size_adjusts_it():
    claims = by_statement(claims_of(hand_built(null_size=0.12, power_gap=0.5,
                                               energy_gap=0.1)))
    assert claims["size within +-0.02 of alpha at every null configuration"].verdict == \
        "contradicted"
    for baseline in ALL_BASELINES:
        power = claims[f"more power than {baseline} on the same-mean alternatives"]
        assert power.verdict == "precondition failed", baseline
        assert power.effect_size > 0   # the interval is still shown
        gate = power.failed_preconditions
        assert [p.statement.split(" ", 1)[0] for p in gate] == ["harmonic_cross"]
        assert "size 0.1200 against 0.0638 at dirichlet n=" in gate[0].evidence
        assert "1000 replicates" in gate[0].evidence and "0 of 2 nulls" in gate[0].evidence
    within = claims["power within 0.05 of the permutation energy test"]
    assert within.verdict == "precondition failed"
    # at its own null critical p (0.0208: size 0.12 = 2.4 alpha at p <= alpha) the
    # harmonic test keeps 0.645 of its power: 0.387 against the baselines' 0.1 and 0.5
    adjusted = claims["more size-adjusted power than hotelling_ilr on the same-mean "
                      "alternatives"]
    assert adjusted.verdict == "supported"
    assert adjusted.effect_size == pytest.approx(0.6 * 0.6449 - 0.1, abs=2e-3)
    assert "critical p-values: harmonic_cross 0.0208" in adjusted.preconditions[0].evidence
    lost = claims["more size-adjusted power than energy_perm on the same-mean alternatives"]
    assert lost.verdict == "contradicted" and lost.effect_size < -0.1
    assert claims["size-adjusted power within 0.05 of the permutation energy test"
                  ].verdict == "contradicted"


def test_a_null_the_run_did_not_measure_fails_the_size_gate():
    results = hand_built(0.05, 0.5, 0.1, null_baselines=tuple(
        m for m in ALL_BASELINES if m != "dirichlet_lrt"))
    claims = by_statement(claims_of(results))
    lrt = claims["more power than dirichlet_lrt on the same-mean alternatives"]
    assert lrt.verdict == "precondition failed"
    [gate] = lrt.failed_preconditions
    assert gate.statement.startswith("dirichlet_lrt holds its size")
    assert gate.evidence.startswith("size not measured in this run: no null configuration "
                                    "for concentration/1.0 n=25 m=25 D=3")
    assert claims["more power than cross_mmd on the same-mean alternatives"].verdict == \
        "supported"


def test_analyze_contradicts_a_power_loss_of_a_sized_test():
    got = verdicts(claims_of(hand_built(null_size=0.05, power_gap=-0.3, energy_gap=-0.2)))
    for baseline in ALL_BASELINES:
        assert got[f"more power than {baseline} on the same-mean alternatives"] == \
            "contradicted", baseline
    assert got["power within 0.05 of the permutation energy test"] == "contradicted"


def test_size_adjusted_power_rejects_at_the_null_critical_p_value():
    from raystudy.studies.compositional_two_sample.analysis import critical_p, size_adjusted

    # the harmonic test rejects 0.1 of its null at p <= alpha: at p <= alpha / 2, 0.05
    trials = collect(hand_built(0.1, 0.5, 0.1))
    null, alternative = trials[0], trials[3]
    assert (null.scenario, alternative.scenario) == ("dirichlet", "concentration/1.0")
    assert critical_p(null, "harmonic_cross") == pytest.approx(0.025)
    assert critical_p(null, "energy_perm") == pytest.approx(0.05)
    power = size_adjusted(alternative, null, "harmonic_cross")
    assert power == pytest.approx(alternative.reject["harmonic_cross"] * 0.5 ** 0.5)
    assert size_adjusted(alternative, None, "harmonic_cross") is None


def test_every_claim_names_its_stand_in_data_and_the_not_run_rows_follow(tmp_path):
    analysis = analyze(hand_built(0.05, 0.5, 0.1), tmp_path)
    for claim in _tested(analysis.claims):
        assert claim.scope.startswith("generated stand-in data from raystudy's generators ("
                                      ), claim.statement
        assert "not the paper's" in claim.scope and "CPU" in claim.scope
        assert "x 100 replicates per configuration" in claim.scope
    power = by_statement(analysis.claims)["more power than james_ilr on the same-mean "
                                          "alternatives"]
    assert "(concentration/1.0, dirichlet, mixture/0.3)" in power.scope
    assert "n in {25, 100}, m = n; {5, 10} batches x 100 replicates" in power.scope
    verdict_order = [c.verdict for c in analysis.claims]
    assert verdict_order[-3:] == ["not run"] * 3 and "not run" not in verdict_order[:-3]
    rows = analysis.claims[-3:]
    assert [c.statement.split(" (", 1)[0] for c in rows] == list(NOT_RUN)
    assert all(c.scope and c.note for c in rows)
    assert "this run: D = 3, n in {25, 50, 100}, m = n, at most 1000 replicates" in \
        rows[2].note


def test_not_run_rows_go_when_the_run_covers_their_regime():
    results = hand_built(0.05, 0.5, 0.1)
    results.trials += [
        trial("vmf", "vmf/0.5", 50, {"harmonic_cross": [0.4] * B, "energy_perm": [0.5] * B}),
        trial("file", "file/1", 30, {"harmonic_cross": [0.4] * B,
                                      "energy_perm": [0.5] * B}, **{"data.path": "/t.tsv"}),
        trial("big", "dirichlet", 400, {"harmonic_cross": [0.05] * B}, ks=0.02,
              **{"data.D": 20, "data.m_ratio": 1.2, "mc.reps": 500})]
    claims = claims_of(results)
    assert not [c for c in claims if c.verdict == "not run"]
    time = by_statement(claims)["at a fraction of the permutation energy test's time per test"]
    assert "rows resampled from the user's table /t.tsv" in time.scope
    assert "B = 99 permutations" in time.scope


def test_non_inferiority_is_all_of_one_losing_alternative_contradicts_it():
    results = hand_built(0.05, 0.5, 0.0)
    results.trials.append(trial("lossy", "mean_shift/0.5", 50,
                                {"harmonic_cross": [0.3 + w for w in WOBBLE],
                                 "energy_perm": [0.5 + w for w in WOBBLE]}))
    claim = [c for c in claims_of(results)
             if "permutation energy test" in c.statement and "power" in c.statement][0]
    assert claim.verdict == "contradicted" and claim.effect_size == pytest.approx(-0.2)
    assert "mean_shift/0.5 n=50 m=50 D=3 (binding)" in claim.effect
    assert "3 of 4 supported" in claim.note and "pooled over every alternative" in claim.note
    assert all(p.holds for p in claim.preconditions) and len(claim.preconditions) == 2


def test_analyze_on_few_sample_sizes_says_why_a_claim_is_open():
    results = hand_built(0.05, 0.5, 0.0)
    results.trials = [t for t in results.trials if t.config["data.n"] != 100]
    claims = by_statement(claims_of(results))
    ks = claims["the KS distance to N(0, 1) falls with n"]
    assert ks.verdict == "inconclusive at this scale" and "only 2 clusters" in ks.note
    assert math.isnan(ks.effect_size)


def test_a_ks_already_at_its_floor_fails_the_convergence_precondition():
    """Kolmogorov's 95 % point at 1000 draws is 0.043: a KS of 0.01 at the smallest n is
    Monte Carlo noise, with no departure from N(0, 1) for larger n to shrink."""
    claims = by_statement(claims_of(hand_built(0.05, 0.5, 0.1, ks_drop=0.002,
                                               ks_start=0.01)))
    ks = claims["the KS distance to N(0, 1) falls with n"]
    assert ks.verdict == "precondition failed"
    assert ks.failed_preconditions[0].evidence.startswith("KS 0.0100 against 0.0428 at "
                                                          "dirichlet n=25")


def test_analyze_without_alternatives_keeps_the_power_claims_as_missing(tmp_path):
    results = hand_built(0.05, 0.5, 0.0)
    results.trials = [t for t in results.trials if t.config["data.scenario"] == "dirichlet"]
    claims = analyze(results, tmp_path).claims
    missing = [c for c in claims if "no same-mean alternative" in c.note]
    assert len(missing) == 7 and all(c.verdict == "inconclusive at this scale"
                                     for c in missing)
    assert all(c.scope for c in claims)


def test_quick_space_has_three_null_sample_sizes():
    """The KS-slope claim needs 3 clusters (sample sizes at a null): the quick profile's
    space gives it 3, so its sweep reads a slope, not nan."""
    import yaml

    from raystudy.studies import compositional_two_sample

    root = Path(compositional_two_sample.__file__).parent
    profile = yaml.safe_load((root / "profiles" / "quick.yaml").read_text())
    space = yaml.safe_load((root / "spaces" / f"{profile['sweep']['space']}.yaml").read_text())
    params = space["params"]
    assert "dirichlet" in params["data.scenario"]["grid"]
    assert len(set(params["data.n"]["grid"])) >= 3, params["data.n"]


def test_the_not_run_scale_is_the_paper_profiles():
    """The paper-scale not-run row names what profiles/paper.yaml and spaces/paper.yaml
    run: the analysis's constants must follow them."""
    import yaml

    from raystudy.studies import compositional_two_sample
    from raystudy.studies.compositional_two_sample import analysis

    root = Path(compositional_two_sample.__file__).parent
    profile = yaml.safe_load((root / "profiles" / "paper.yaml").read_text())["config"]
    params = yaml.safe_load((root / "spaces" / "paper.yaml").read_text())["params"]
    assert max(params["data.D"]["grid"]) == analysis.PAPER_PROFILE_D
    assert max(params["data.n"]["grid"]) == analysis.PAPER_PROFILE_N
    assert profile["data"]["m_ratio"] == analysis.PAPER_PROFILE_M_RATIO
    assert profile["mc"]["batches"] * profile["mc"]["reps"] == \
        analysis.PAPER_PROFILE_REPLICATES


# ----------------------------------------------------------------------------- on Ray
@pytest.mark.ray
def test_quick_sweep_shrunk_through_the_cli_with_batches_as_ray_tasks(ray_session, tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text("params:\n  data.scenario: {grid: [dirichlet, mixture/0.5]}\n"
                     "  data.n: {grid: [16, 24]}\n")
    sets = {**TINY, "mc.reps": 20, "data.n": 16}
    assert main(["sweep", STUDY_NAME, "--profile", "quick", "--space", str(space),
                 "--storage", str(tmp_path / "runs"), "--name", "smoke", "--map-tasks", "2",
                 "--cpus-per-map-task", "0.5", "--cpus-per-worker", "0.5",  # batches as tasks
                 *(x for k, v in sets.items() for x in ("--set", f"{k}={v}"))]) == 0
    run_dir = tmp_path / "runs" / "smoke"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["counts"]["finished"] == 4
    tested = [c for c in summary["claims"] if c["verdict"] != "not run"]
    assert {c["statement"].split(": ", 1)[0] for c in tested} == \
        {"harmonic (cross)", "harmonic (full)"}
    nominal = [c for c in tested if "size-adjusted" not in c["statement"]]
    assert len(nominal) == 22   # per reading: size, KS, 7 power rows, non-inferiority, time
    assert all(c["scope"].startswith("generated stand-in data") for c in tested)
    assert [c["verdict"] for c in summary["claims"][len(tested):]] == ["not run"] * 3
    assert set(summary["analysis"]["ks"]) == {"dirichlet n=16 m=16 D=3 L=10",
                                              "dirichlet n=24 m=24 D=3 L=10"}
    report = (run_dir / "report.md").read_text()
    for text in ("## Claim", "### Size at the null configurations", "power_D3.png", "qq.png"):
        assert text in report, text
