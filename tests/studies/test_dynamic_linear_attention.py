"""The dynamic_linear_attention study: the recall loop without Ray (metrics, the equal
budget, exact resume), the mechanism task against closed forms (an aligned partition of a
noise-free piecewise stream has bound 0, FIFO keeps K blocks, Fenwick popcount + 1), the
claims' gates on synthetic trials, bad input as one line, and a sweep through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from raystudy import LocalContext, RunResults, TrialRecord
from raystudy.cli import main
from raystudy.errors import ConfigError
from raystudy.platform.configuration.config import apply_overrides, validate
from raystudy.studies.dynamic_linear_attention.analysis import analyze, levels
from raystudy.studies.dynamic_linear_attention.config import DynamicLinearAttentionConfig
from raystudy.studies.dynamic_linear_attention.recipe import STUDY, train_loop

TINY = {"data.seq_len": 16, "data.vocab_size": 12, "data.num_kv_pairs": 2,
        "data.filler_vocab": 4, "data.filler_run_mean": 3.0, "data.test_size": 8,
        "model.d_model": 16, "model.n_heads": 2, "train.steps": 4, "train.eval_every": 2,
        "train.batch_size": 4, "train.warmup": 2, "mechanism.length": 64,
        "mechanism.streams": 3, "mechanism.loads": [0.25, 0.5], "mechanism.taus": [0.4, 0.8]}


def _config(**overrides) -> DynamicLinearAttentionConfig:
    return validate(apply_overrides(DynamicLinearAttentionConfig(), {**TINY, **overrides}))


def _run(cfg: DynamicLinearAttentionConfig, checkpoint=None) -> LocalContext:
    ctx = LocalContext(STUDY.metrics, checkpoint=checkpoint)
    train_loop(cfg, ctx)
    return ctx


@pytest.mark.parametrize("mixer", ["dla", "loglinear", "softmax"])
def test_the_recall_loop_reports_its_metrics_within_the_equal_budget(mixer):
    ctx = _run(_config(**{"model.mixer": mixer}))
    assert [r["train/step"] for r in ctx.reports] == [2, 4]
    last = ctx.reports[-1]
    assert 0 <= last["eval/acc_far"] <= 1 and 0 <= last["eval/acc"] <= 1
    assert last["data/capacity"] == levels(16) == 5 and last["time/step_ms"] > 0
    if mixer == "softmax":
        assert "states/max" not in last
    else:
        assert 1 <= last["states/mean"] <= last["states/max"] <= 5
    assert ("boundary/kv_rate" in last) == (mixer == "dla")


def test_a_resumed_trial_ends_where_an_uninterrupted_one_does():
    full = _run(_config())
    part = _run(_config(**{"train.steps": 2}))
    resumed = _run(_config(), checkpoint=part.last_checkpoint)
    assert [r["train/step"] for r in resumed.reports] == [4]
    for key in ("eval/acc", "eval/loss", "train/loss", "boundary/kv_rate"):
        assert resumed.reports[-1][key] == full.reports[-1][key], key
    assert full.last_checkpoint is not None and resumed.last_checkpoint is not None
    for name, value in full.last_checkpoint["model"].items():
        assert torch.equal(value, resumed.last_checkpoint["model"][name]), name


def test_the_mechanism_task_against_closed_forms_and_its_resume():
    ctx = _run(_config(**{"task": "mechanism", "mechanism.noise": 0.0}))
    first, last = ctx.reports
    assert {"mech/piecewise/tau/state_drift", "mech/needles/tau/token_vs_state"} <= set(first)
    K, T = 7, 64                                                   # loglinear_levels(64)
    assert last["mech/capacity"] == K and last["mech/bound_violations"] == 0
    assert last["mech/piecewise/oracle/bound"] == pytest.approx(0.0, abs=1e-12)  # aligned
    assert last["mech/piecewise/oracle/f1"] == 1.0
    assert last["mech/piecewise/fifo/blocks"] == K
    assert last["mech/piecewise/loglinear/blocks"] == bin(T - 1).count("1") + 1
    assert last["mech/needles_0.25/load"] == pytest.approx(2 / K)  # round(0.25 K) needles
    for score in ("state_drift", "token_vs_state"):              # D3/D4's matched counts
        for i in range(3):
            assert (last[f"mech/piecewise/dla/{score}/blocks@{i}"]
                    == last[f"mech/piecewise/fixed/{score}/blocks@{i}"] <= K)
    resumed = _run(_config(**{"task": "mechanism", "mechanism.noise": 0.0}),
                   checkpoint=_first_step_checkpoint())
    assert len(resumed.reports) == 1 and resumed.reports[0] == last


def _first_step_checkpoint():
    """The checkpoint the mechanism trial writes after choosing tau (step 1 of 2)."""

    class Stop(Exception):
        pass

    class OneStep(LocalContext):
        def _send(self, metrics, checkpoint):
            super()._send(metrics, checkpoint)
            raise Stop

    ctx = OneStep(STUDY.metrics)
    with pytest.raises(Stop):
        train_loop(_config(**{"task": "mechanism", "mechanism.noise": 0.0}), ctx)
    return ctx.last_checkpoint


def _recall(mixer: str, T: int, seed: int, acc: float, states: float | None = None):
    settings = {"task": "recall", "model.mixer": mixer, "data.seq_len": T, "train.seed": seed,
                "dla.tau": 0.1, "dla.score": "state_drift", "dla.capacity": "levels",
                "data.num_kv_pairs": 4, "data.kind": "mqar_sparse"}
    metrics = {"eval/acc": acc, "states/max": float(levels(T) if states is None else states)}
    return TrialRecord(f"{mixer}{T}{seed}", settings, "TERMINATED", [metrics], config=settings)


def _mechanism(dla_bound: float):
    metrics = {"mech/capacity": 9.0, "mech/streams": 8.0, "mech/bound_violations": 0.0,
               "mech/needles_0.5/load": 4 / 9, "mech/needles_1/load": 1.0}
    for s in ("state_drift", "token_vs_state"):
        metrics.update({f"mech/piecewise/tau/{s}": 0.4, f"mech/needles/tau/{s}": 0.8})
        for i in range(8):
            metrics.update({f"mech/piecewise/dla/{s}/bound@{i}": dla_bound + i,
                            f"mech/piecewise/fixed/{s}/bound@{i}": 100.0 + i,
                            f"mech/piecewise/dla/{s}/blocks@{i}": 8.0,
                            f"mech/piecewise/fixed/{s}/blocks@{i}": 8.0 if i else 7.0})
            for family, gain in (("needles_0.5", 0.2), ("needles_1", -0.1)):
                metrics.update({f"mech/{family}/dla/{s}/recall@{i}": 0.7 + gain + 0.01 * i,
                                f"mech/{family}/fixed/{s}/recall@{i}": 0.7,
                                f"mech/{family}/dla/{s}/blocks@{i}": 9.0,
                                f"mech/{family}/fixed/{s}/blocks@{i}": 9.0})
                metrics[f"mech/{family}/dla/{s}/recall"] = 0.7 + gain
                metrics[f"mech/{family}/fixed/{s}/recall"] = 0.7
    return TrialRecord("mech", {"task": "mechanism"}, "TERMINATED", [metrics],
                       config={"task": "mechanism"})


def _results(fixed_acc: float = 0.6, lengths=(64, 128), dla_states=None) -> RunResults:
    rng = np.random.default_rng(0)
    trials = [_mechanism(dla_bound=60.0)]
    for T in lengths:
        for seed in range(8):
            gain = 0.1 * np.log2(T / 64)                          # D2: grows with log2 T
            trials += [_recall("dla", T, seed, 0.8 + gain + 0.01 * rng.standard_normal(),
                               dla_states),
                       _recall("loglinear", T, seed, 0.7 + 0.01 * rng.standard_normal()),
                       _recall("fixed_chunk", T, seed, fixed_acc + 0.01 * rng.standard_normal()),
                       _recall("softmax", T, seed, 0.25)]
    return RunResults(Path("."), {}, trials)


def _claims(analysis, prefix: str) -> list:
    return [c for c in analysis.claims if c.statement.startswith(prefix)]


def test_the_claims_read_their_gates(tmp_path):
    good = analyze(_results(), tmp_path)
    assert [c.verdict for c in _claims(good, "D1")] == ["supported", "supported"]
    assert "T = 128" in _claims(good, "D1")[0].statement
    assert _claims(good, "D2")[0].verdict == "supported"
    d3 = _claims(good, "D3")                      # stream 0's block counts differ: gate fails
    assert [c.verdict for c in d3] == ["precondition failed"] * 2
    assert "precondition failed" in d3[0].note and "7 of 8 streams" in d3[0].note
    d4 = _claims(good, "D4")                      # only load 0.44 <= 0.5, per score
    assert [c.verdict for c in d4] == ["supported", "supported"]
    assert "at load 1.00" in d4[0].note           # the flip load
    assert [c.verdict for c in good.claims[-4:]] == ["not run"] * 4
    assert all("generated" in c.scope and "CPU" in c.scope for c in good.claims
               if c.verdict != "not run")
    # a baseline at chance (1/P = 0.25) gates every D1 member
    chance = analyze(_results(fixed_acc=0.3), tmp_path)
    row = _claims(chance, "D1")[0]
    assert row.verdict == "precondition failed" and "fixed_chunk learned" in row.note
    # a bounded mixer over loglinear_levels(T) states fails the budget gate
    over = analyze(_results(dla_states=levels(128) + 1), tmp_path)
    assert _claims(over, "D1")[0].verdict == "precondition failed"
    assert "equal budget" in _claims(over, "D1")[0].note
    # a baseline at the ceiling leaves DLA nothing to exceed
    ceiling = analyze(_results(fixed_acc=0.99), tmp_path)
    rows = _claims(ceiling, "D1")
    assert [c.verdict for c in rows] == ["supported", "precondition failed"]
    assert "fixed_chunk leaves room" in rows[1].note
    # one length: D2 cannot be read
    single = analyze(_results(lengths=(64,)), tmp_path)
    assert _claims(single, "D2")[0].verdict == "inconclusive at this scale"


def test_bad_input_is_one_line(tmp_path, capsys):
    for key, value in (("dla.tau", "-1"), ("dla.score", "kl"), ("model.mixer", "mamba"),
                       ("data.num_kv_pairs", "5")):
        with pytest.raises(ConfigError, match=key.split(".")[-1]):
            _config(**{key: value})
    assert main(["run", "dynamic_linear_attention", "--in-process", "--set", "dla.capacity=0",
                 "--storage", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "dla.capacity" in err[0]


@pytest.mark.ray
def test_a_sweep_through_the_cli_reads_every_claim(tmp_path, ray_session):
    space = tmp_path / "space.yaml"
    space.write_text("params:\n  task: {grid: [recall, mechanism]}\n"
                     "  model.mixer: {grid: [dla, loglinear]}\n  train.seed: {grid: [0]}\n")
    sets = [a for k, v in TINY.items() for a in
            ("--set", f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}")]
    assert main(["sweep", "dynamic_linear_attention", "--profile", "quick", "--space",
                 str(space), "--storage", str(tmp_path / "runs"), "--name", "q", *sets]) == 0
    run_dir = tmp_path / "runs" / "q"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["counts"]["finished"] == 4, summary["counts"]
    verdicts = {c["statement"].split(":")[0] for c in summary["claims"]}
    assert {"D1", "D2", "D3", "D4"} <= verdicts
    assert all(c["scope"] for c in summary["claims"])
    assert (run_dir / "figures" / "needles.png").exists()
