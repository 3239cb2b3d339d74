"""The temporal study: the loop without Ray (a report per year boundary, determinism,
resume), a config error, make-temporal-world read back through the token and KairosQA
readers, the claims on hand-made results (the calibration gate, equivalence rows), and a
shrunk sweep through the CLI with every claim in the summary."""

from __future__ import annotations

import json

import pytest

from raystudy import LocalContext
from raystudy.cli import main
from raystudy.contract.results import RunResults, TrialRecord
from raystudy.errors import ConfigError
from raystudy.platform.configuration.config import apply_overrides, validate
from raystudy.studies.temporal_pretraining.analysis import analyze
from raystudy.studies.temporal_pretraining.recipe import STUDY, TemporalConfig, train_loop

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
                "eval/forget_2020", "eval/forgetting"):
        assert key in last
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
    capsys.readouterr()
    assert main(["run", "temporal_pretraining", "--in-process", "--set", "data.source=tokens",
                 "--set", f"data.path={tmp_path / 'none'}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "make-temporal-world" in err[0]


def _results(lead: float, learned: bool = True, seeds: int = 8) -> RunResults:
    trials = []
    for schedule, sign in (("sequential", 1.0), ("shuffled", 0.0)):
        for s in range(seeds):
            jitter = 0.01 * ((s * 7) % 5)
            base = 0.6 if learned else 0.26
            last = {"eval/acc_last": base + sign * lead + jitter, "eval/chance": 0.25,
                    "eval/freshness": 0.5 + sign * lead + jitter,
                    "eval/recency_slope": sign * lead + jitter,
                    "eval/year_error": 1.0 - sign * lead + jitter,
                    "eval/acc_first": 0.5 - sign * lead + jitter,
                    "eval/val_loss": 2.0 + 0.001 * jitter, "eval/invariant_acc": 0.9,
                    "eval/acc_2020": 0.5, "eval/acc_2021": 0.6, "train/year": 2021}
            trials.append(TrialRecord(f"{schedule}-{s}", {}, "finished", history=[last],
                                      config={"train.schedule": schedule, "train.seed": s,
                                              "data.hist_share": 0.2}))
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


def test_claims_read_the_runs_and_the_calibration_gate(tmp_path):
    rows = analyze(_results(0.2), tmp_path).claims
    verdicts = {c.statement[:2] + str(i): c.verdict for i, c in enumerate(rows)}
    assert list(verdicts.values())[:5] == ["supported"] * 5
    assert [c.verdict for c in rows if c.statement.startswith("T3")] == ["supported"] * 2
    assert rows[-1].statement.startswith("T6") and "mechanism" in rows[-1].note
    wrong = analyze(_results(-0.2), tmp_path).claims
    assert [c.verdict for c in wrong[:5]] == ["contradicted"] * 5
    gated = analyze(_results(0.2, learned=False), tmp_path)
    assert all(c.verdict == "inconclusive at this scale" for c in gated.claims)
    assert "did not learn the facts" in gated.claims[0].note


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
