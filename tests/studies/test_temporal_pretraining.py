"""The temporal study: the loop without Ray (a report per year boundary, determinism,
resume), a config error, make-temporal-world read back through the token and KairosQA
readers, the year error per year and its chance references against oracle scorers, the
claims on hand-made results (each arm against chance, T4 against the references, the
scope naming the stand-in, the not-run rows, the largest size of a scale run, where the
cool-down falls), and a shrunk sweep through the CLI with every claim in the summary."""

from __future__ import annotations

import json

import pytest

from raystudy import LocalContext
from raystudy.cli import main
from raystudy.contract.results import RunResults, TrialRecord
from raystudy.errors import ConfigError
from raystudy.platform.configuration.config import apply_overrides, validate
from raystudy.studies.temporal_pretraining.analysis import analyze
from raystudy.studies.temporal_pretraining.config import TemporalConfig
from raystudy.studies.temporal_pretraining.recipe import STUDY, probe_reads_the_data, train_loop

TINY = {"world.entities": 6, "world.relations": 1, "world.years": 3, "world.values": 5,
        "world.p_change": 0.9, "train.steps_per_year": 4, "train.batch_size": 4,
        "train.warmup": 2, "model.d_model": 16, "model.n_layers": 1, "model.n_heads": 2,
        "model.seq_len": 48, "data.filler_bytes": 20_000, "data.val_rows": 8}


def config(**overrides) -> TemporalConfig:
    return validate(apply_overrides(TemporalConfig(), {**TINY, **overrides}))


def run(cfg: TemporalConfig, checkpoint=None) -> LocalContext:
    ctx = LocalContext(STUDY.metrics, checkpoint=checkpoint)
    train_loop(cfg, ctx)
    return ctx


def test_loop_reports_every_year_boundary_and_is_deterministic():
    ctx = run(config(**{"train.schedule": "shuffled"}))
    assert [r["train/year"] for r in ctx.reports] == [2020, 2021, 2022]
    last = ctx.reports[-1]
    for key in ("eval/acc_2020", "eval/acc_2022", "eval/recency_slope", "eval/year_error",
                "eval/freshness", "eval/val_loss", "eval/invariant_acc", "eval/gen_f1_last",
                "eval/forget_2020", "eval/forgetting", "eval/year_error_2020",
                "eval/year_error_2022", "eval/year_error_uniform_2021",
                "eval/year_error_newest_2022", "eval/year_error_uniform",
                "eval/year_error_newest", "eval/invariant_chance"):
        assert key in last, key
    assert 0 <= last["eval/acc_last"] <= 1 and last["eval/forgetting"] >= 0
    assert last["train/lr"] == 0.0  # the WSD cooldown ends at 0
    again = run(config(**{"train.schedule": "shuffled"}))
    assert again.reports[-1] == pytest.approx(last)


class KeepAll(LocalContext):
    """Keeps every checkpoint (LocalContext keeps the last)."""

    def _send(self, metrics, checkpoint):
        super()._send(metrics, checkpoint)
        self.kept = [*getattr(self, "kept", []), self.last_checkpoint]


def test_resume_continues_from_a_year_boundary():
    cfg = config(**{"train.schedule": "sequential"})
    full = KeepAll(STUDY.metrics)
    train_loop(cfg, full)
    resumed = run(cfg, checkpoint=full.kept[1])  # after the second year
    assert [r["train/year"] for r in resumed.reports] == [2022]
    assert resumed.reports[-1]["eval/acc_last"] == full.reports[-1]["eval/acc_last"]
    assert resumed.reports[-1]["eval/forgetting"] == pytest.approx(
        full.reports[-1]["eval/forgetting"])


def test_bad_config_is_one_line():
    with pytest.raises(ConfigError, match="unknown schedule"):
        config(**{"train.schedule": "chronological"})
    with pytest.raises(ConfigError, match="data.path"):
        config(**{"data.source": "tokens"})


def test_make_temporal_world_then_the_token_and_kairosqa_readers(tmp_path, capsys):
    out = tmp_path / "tw"
    assert main(["data", "make-temporal-world", str(out), "--entities", "6", "--relations",
                 "1", "--years", "3", "--values", "5", "--p-change", "0.9",
                 "--rows-per-year", "16", "--val-rows", "8", "--seq-len", "48"]) == 0
    assert (out / "2022" / "train.npy").is_file() and (out / "val.npy").is_file()
    records = [json.loads(line) for line in (out / "kairosqa.jsonl").read_text().splitlines()]
    assert {"question", "multi_choice_answers", "subject", "relation"} <= set(records[0])
    ctx = run(config(**{"data.source": "tokens", "data.path": str(out), "data.k_shot": 1,
                        "data.kairosqa": str(out / "kairosqa.jsonl")}))
    last = ctx.reports[-1]
    assert any(k.startswith("eval/kairos_acc_") for k in last)
    assert all(0 <= v <= 1 for k, v in last.items() if k.startswith("eval/kairos_mc_acc_"))
    assert any(k.startswith("eval/kairos_mc_acc_") for k in last)
    # the files name their world: the dated probes count for this world and seed only
    assert json.loads((out / "world.json").read_text())["seed"] == 0
    assert last["data/probe_reads_the_data"] == 1.0
    tokens = config(**{"data.source": "tokens", "data.path": str(out)})
    assert probe_reads_the_data(tokens) == 1.0
    assert probe_reads_the_data(config(**{"data.source": "tokens", "data.path": str(out),
                                          "train.seed": 1})) == 0.0
    assert probe_reads_the_data(config(**{"data.source": "tokens", "data.path": str(out),
                                          "world.values": 6})) == 0.0
    (out / "world.json").unlink()
    assert probe_reads_the_data(tokens) == 0.0
    capsys.readouterr()
    assert main(["run", "temporal_pretraining", "--in-process", "--set", "data.source=tokens",
                 "--set", f"data.path={tmp_path / 'none'}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "make-temporal-world" in err[0]


def test_the_year_error_per_year_pools_to_the_probes_and_the_references_are_guesses():
    """Oracle scorers through the per-year year error: an arbitrary fixed scorer's errors
    pool to ``dated_probe``'s own (read from memory, not scored again), and a scorer that
    always prefers the most recently held value scores exactly the always-newest reference."""
    import zlib

    import numpy as np

    from raystudy.algorithms.temporal import build_choices, dated_probe, make_world, world_records
    from raystudy.studies.temporal_pretraining.references import (
        N_CHOICES,
        chance_references,
        model_year_errors,
        pooled,
        remembering,
    )

    world = make_world(16, 2, 2020, 6, 12, 0.6, seed=3)
    records = world_records(world, seed=3)
    scored = []

    def arbitrary(pairs):
        scored.append(len(pairs))
        return np.array([zlib.crc32(f"{c}|{x}".encode()) % 1000 / 100 for c, x in pairs])

    scorer = remembering(arbitrary)
    dated = dated_probe(records, world.years, scorer)
    before = sum(scored)
    per_year = model_year_errors(records, world.years, scorer)
    assert sum(scored) == before  # the dated probe's pairs, remembered
    references = chance_references(records, world.years)
    assert set(per_year) == set(references) == set(world.years)
    assert pooled(per_year, references) == pytest.approx(dated.year_error)
    # NLL = -(year held) x length: the character normalisation leaves -year, argmin = newest
    recency = {("\n" + it["question"], f" {c}."): -year * len(f" {c}.")
               for y in world.years for it in build_choices(records, y, N_CHOICES)
               for c, year in zip(it["choices"], it["choice_years"], strict=True)}
    newest = model_year_errors(records, world.years,
                               lambda pairs: np.array([recency[p] for p in pairs]))
    assert newest == pytest.approx({y: r.newest for y, r in references.items()})
    assert references[world.years[-1]].newest == 0.0  # the final year's value is the newest
    assert all(r.uniform > 0 and r.questions > 0 for r in references.values())


def _report(schedule: str, seed: int, lead: float, learned: bool) -> dict[str, float]:
    """A fake final report: sequential ahead of shuffled by ``lead`` on every directional
    metric, both arms above chance when ``learned``."""
    sign = 1.0 if schedule == "sequential" else 0.0
    jitter = 0.01 * ((seed * 7) % 5)
    base = 0.6 if learned else 0.26
    return {"eval/acc_last": base + sign * lead + jitter, "eval/chance": 0.25,
            "eval/freshness": 0.5 + sign * lead + jitter,
            "eval/gen_f1_last": 0.4 + sign * lead + jitter,
            "eval/recency_slope": sign * lead + jitter,
            "eval/year_error": 1.0 - sign * lead + jitter,
            "eval/acc_first": 0.5 - sign * lead + jitter, "eval/acc_mean": base + jitter,
            "eval/val_loss": 2.0 + 0.001 * jitter, "eval/invariant_acc": 0.9,
            "eval/invariant_chance": 0.125, "eval/acc_2020": 0.5, "eval/acc_2021": 0.6,
            "eval/year_error_2020": 1.2, "eval/year_error_2021": 0.8,
            "eval/year_error_uniform": 2.0, "eval/year_error_newest": 2.2,
            "eval/year_error_uniform_2020": 2.1, "eval/year_error_uniform_2021": 1.9,
            "eval/year_error_newest_2020": 2.5, "eval/year_error_newest_2021": 1.9,
            "train/year": 2021}


def _results(lead: float, learned: bool = True, seeds: int = 8, sizes=((120, 64),),
             shares=(0.2,), edit=None, **config) -> RunResults:
    """Sequential and shuffled at each size (steps/year, d_model) and hist_share;
    ``edit(schedule, size, share, report)`` changes a report in place."""
    trials = []
    for steps, width in sizes:
        for share in shares:
            for schedule in ("sequential", "shuffled"):
                for s in range(seeds):
                    last = _report(schedule, s, lead, learned)
                    if edit:
                        edit(schedule, (steps, width), share, last)
                    trials.append(TrialRecord(
                        f"{schedule}-{s}-{steps}-{width}-{share}", {}, "finished",
                        history=[last], config={
                            "train.schedule": schedule, "train.seed": s,
                            "data.hist_share": share, "train.steps_per_year": steps,
                            "model.d_model": width, "model.n_layers": 2, "world.years": 3,
                            "data.source": "world", **config}))
    return RunResults(None, {}, trials)


def test_forgetting_matrix_per_schedule(tmp_path):
    results = _results(0.2, seeds=2)
    for t in results.trials:  # two yearly checkpoints: 2020's accuracy falls after 2021
        t.history = [{**t.history[0], "train/year": 2020, "eval/acc_2020": 0.8,
                      "eval/acc_2021": 0.1}, t.history[0]]
    tables = {t.title.split(" (")[0]: t for t in analyze(results, tmp_path).tables}
    seq = tables["Forgetting matrix: sequential"]
    assert seq.columns == ["trained through", "2020", "2021"]
    assert seq.rows == [[2020, 0.8, 0.1], [2021, 0.5, 0.6]]
    assert "Forgetting matrix: shuffled" in tables


def test_claims_read_the_runs_when_every_arm_learned(tmp_path):
    rows = analyze(_results(0.2), tmp_path).claims
    tested = [c for c in rows if c.verdict != "not run"]
    assert [c.verdict for c in tested[:6]] == ["supported"] * 6
    assert any("greedy F1" in c.statement for c in tested[:6])  # the secondary reading
    assert all(p.holds for c in tested[:6] for p in c.preconditions)
    assert [c.verdict for c in rows if c.statement.startswith("T3")] == ["supported"] * 2
    assert tested[-1].statement.startswith("T6") and "mechanism" in tested[-1].note
    wrong = analyze(_results(-0.2), tmp_path).claims
    assert [c.verdict for c in wrong[:6]] == ["contradicted"] * 6


def test_an_arm_at_chance_fails_the_precondition_of_every_comparison_of_arms(tmp_path):
    """The reviewer's case: shuffled's final-year accuracy 0.235 against chance 0.25."""
    def at_chance(schedule, size, share, report):
        if schedule == "shuffled":
            report["eval/acc_last"] = 0.235

    rows = analyze(_results(0.2, edit=at_chance), tmp_path).claims
    directional = [c for c in rows if c.statement[:2] in ("T1", "T2", "T4", "T5")
                   and c.verdict != "not run"]
    assert len(directional) == 6
    assert all(c.verdict == "precondition failed" for c in directional)
    failed = directional[0].failed_preconditions
    assert [p.statement.split(" ")[0] for p in failed] == ["shuffled"]
    assert "0.235" in failed[0].evidence and "0.250 + 0.1" in failed[0].evidence
    # the effect and its interval are still shown, the note names what failed
    assert directional[0].effect_size > 0 and "shuffled learned year binding" in \
        directional[0].note
    # the parity claims compare what both arms did learn: not gated on year binding
    assert [c.verdict for c in rows if c.statement.startswith("T3")] == ["supported"] * 2
    unlearned = analyze(_results(0.2, learned=False), tmp_path).claims
    assert all(c.verdict == "precondition failed" for c in unlearned[:6])


def test_t4_needs_each_arm_below_the_better_chance_reference(tmp_path):
    def guessing(schedule, size, share, report):
        if schedule == "sequential":  # errs like the uniform guess (2.0): 1.98 to 2.02
            report["eval/year_error"] = 1.98 + (report["eval/acc_mean"] - 0.6)

    rows = analyze(_results(0.2, edit=guessing), tmp_path).claims
    t4 = next(c for c in rows if c.statement.startswith("T4"))
    assert t4.verdict == "precondition failed"
    failed = t4.failed_preconditions
    assert len(failed) == 1 and failed[0].statement.startswith("sequential's year error")
    assert "uniform guess 2.00" in failed[0].evidence and "always newest 2.20" in \
        failed[0].evidence
    assert all(c.verdict != "precondition failed" for c in rows
               if c.statement[:2] in ("T1", "T2", "T5"))
    table = next(t for t in analyze(_results(0.2), tmp_path).tables
                 if t.title.startswith("Year error per question year"))
    assert table.columns == ["arm", "2020", "2021", "pooled"]
    assert table.rows[-2] == ["uniform guess", 2.1, 1.9, 2.0]
    assert table.rows[-1] == ["always newest", 2.5, 1.9, 2.2]


def test_references_are_rebuilt_from_the_config_for_a_run_that_predates_them(tmp_path):
    def old(schedule, size, share, report):
        for key in [k for k in report if "uniform" in k or "newest" in k]:
            del report[key]

    rows = analyze(_results(0.2, edit=old), tmp_path).claims
    t4 = next(c for c in rows if c.statement.startswith("T4"))
    evidence = t4.preconditions[2].evidence
    assert "uniform guess" in evidence and "nan" not in evidence


def test_every_claim_names_the_stand_in_and_the_paper_regimes_not_run(tmp_path):
    rows = analyze(_results(0.2), tmp_path).claims
    assert all(c.scope.strip() for c in rows)
    tested = [c for c in rows if c.verdict != "not run"]
    assert all("generated temporal world" in c.scope and "stand-in" in c.scope
               and "CPU" in c.scope for c in tested)
    not_run = [c for c in rows if c.verdict == "not run"]
    assert rows[-len(not_run):] == not_run  # after the tested rows
    assert len(not_run) == 2
    assert "Common Crawl" in not_run[0].scope and "generated world" in not_run[0].note
    assert "6B" in not_run[1].scope and "d 64 x 2 layers" in not_run[1].note
    real = analyze(_results(0.2, **{"data.source": "tokens", "data.path": "/data/years",
                                    "data.kairosqa": "/data/KairosQA.jsonl"}), tmp_path)
    assert [c.statement for c in real.claims if c.verdict == "not run"] == [
        "T1-T6 at the paper's scale"]
    assert "per-year token files from /data/years" in real.claims[0].scope


def test_on_token_files_the_probe_claims_need_files_written_for_the_probed_world(tmp_path):
    def reads(value):
        def edit(schedule, size, share, report):
            report["data/probe_reads_the_data"] = value if schedule == "shuffled" else 1.0
        return analyze(_results(0.2, edit=edit, **{"data.source": "tokens",
                                                   "data.path": "/data/years"}), tmp_path)

    written = reads(1.0).claims
    assert [c.verdict for c in written[:6]] == ["supported"] * 6
    real = [c for c in reads(0.0).claims if c.verdict != "not run"]
    probed = [c for c in real if c.statement[:2] in ("T1", "T2", "T4", "T5")
              or "invariant" in c.statement]
    assert probed and all(c.verdict == "precondition failed" for c in probed)
    failed = probed[0].failed_preconditions[0]
    assert "8 of 16 trials" in failed.evidence and "KairosQA" in failed.evidence
    general_text = next(c for c in real if "general text" in c.statement)
    assert general_text.verdict == "supported"  # val loss reads the files, not the probe


def test_a_scale_run_reads_the_claims_at_its_largest_size(tmp_path):
    def small_shuffled_at_chance(schedule, size, share, report):
        if schedule == "shuffled" and size == (120, 64):
            report["eval/acc_last"] = 0.235

    a = analyze(_results(0.2, sizes=((120, 64), (480, 128), (480, 64)),
                         edit=small_shuffled_at_chance), tmp_path)
    assert [c.verdict for c in a.claims[:6]] == ["supported"] * 6
    assert "d 128 x 2 layers, 480 steps/year" in a.claims[0].scope
    arms = next(t for t in a.tables if t.title.startswith("Each arm against chance"))
    read_here = {(r[0], r[2], r[3]): (r[8], r[-1]) for r in arms.rows}
    assert read_here[("shuffled", 120, 64)] == ("no", "")
    assert read_here[("shuffled", 480, 128)] == ("yes", "yes")
    assert read_here[("sequential", 480, 64)][1] == ""
    assert any("the claims read the largest" in n for n in a.notes)


def test_the_cool_down_falls_on_the_same_steps_for_both_arms(tmp_path):
    a = analyze(_results(0.2, seeds=2, **{"world.years": 6, "train.batch_size": 16,
                                          "train.cooldown": 0.1}), tmp_path)
    table = next(t for t in a.tables if t.title.startswith("Learning-rate cool-down"))
    seq, shu = table.rows
    assert seq[1] == shu[1] == "649-720 of 720" and seq[2] == shu[2]
    assert seq[3:] == [0.0] * 5 + [1.0]  # sequential cools down on the final year's rows
    assert all(0.1 < share < 0.25 for share in shu[3:])  # shuffled on every year's


def test_t6_and_t3_are_gated_on_what_their_arms_learned(tmp_path):
    def mechanism(schedule, size, share, report):
        report["eval/recency_slope"] -= 0.1 * share
        if schedule == "shuffled":
            report["eval/acc_mean"] = 0.27  # shuffled near chance over the years
            report["eval/invariant_acc"] = 0.13  # and at chance on the invariant facts

    rows = analyze(_results(0.2, shares=(0.0, 0.2, 0.4), edit=mechanism), tmp_path).claims
    t6 = next(c for c in rows if c.statement.startswith("T6"))
    assert t6.verdict == "precondition failed" and t6.n == 8
    assert "hist_share 0, 0.4" in t6.scope
    invariant = next(c for c in rows if "invariant facts" in c.statement)
    assert invariant.verdict == "precondition failed"
    assert "0.130 vs chance 0.125" in invariant.failed_preconditions[0].evidence


def test_the_scale_space_crosses_steps_and_width_for_both_arms():
    from raystudy.platform.configuration.spaces import load_space

    params = load_space(STUDY, "scale")
    assert params["train.schedule"]["grid"] == ["sequential", "shuffled"]
    assert len(params["train.steps_per_year"]["grid"]) >= 2
    assert len(params["model.d_model"]["grid"]) >= 2


def test_shrunk_sweep_through_the_cli(tmp_path, ray_session):
    space = tmp_path / "tiny.yaml"
    space.write_text("params:\n  train.schedule: {grid: [sequential, shuffled]}\n"
                     "  train.seed: {grid: [0]}\n")
    sets = [a for k, v in TINY.items() for a in ("--set", f"{k}={v}")]
    assert main(["sweep", "temporal_pretraining", "--profile", "quick", "--space", str(space),
                 "--storage", str(tmp_path), *sets]) == 0
    run_dir = next(p for p in tmp_path.iterdir() if p.is_dir())
    texts = json.dumps(json.loads((run_dir / "summary.json").read_text()))
    for label in ("T1", "T2", "T3", "T4", "T5", "T6"):
        assert f"{label}:" in texts
