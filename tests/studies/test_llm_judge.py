"""The llm_judge study: every arm's loop without Ray, the teacher arm against the teacher
recomputed by hand, the DPO preferences' construction, exact resume mid-stage, the claims'
preconditions on synthetic trials, bad input as one line, and a sweep through the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from raystudy import LocalContext, RunResults, TrialRecord
from raystudy.algorithms.judging import (
    agreement,
    biased_teacher,
    make_world,
    position_bias,
    position_consistency,
)
from raystudy.cli import main
from raystudy.platform.configuration.config import apply_overrides, validate
from raystudy.studies.llm_judge.analysis import analyze
from raystudy.studies.llm_judge.config import ARMS, LlmJudgeConfig
from raystudy.studies.llm_judge.recipe import (
    SEED_STRIDE,
    STUDY,
    build_data,
    build_judge,
    consensus,
    cue_balanced,
    judge_chunk,
    judge_spec,
    train_loop,
)

TINY = {"world.n_train": 200, "world.n_test": 40, "world.n_base": 30, "world.n_digits": 3,
        "world.max_pad": 2, "judge.d_model": 16, "judge.n_layers": 1, "judge.n_heads": 2,
        "sft.steps": 4, "dpo.steps": 4, "rl.steps": 4, "train.batch_size": 16,
        "rl.group_size": 4, "train.eval_every": 3}
KEYS = ("eval/agreement", "eval/macro_f1", "eval/tie_rate", "eval/base_agreement",
        "eval/majority_rate", "bias/position", "bias/length", "bias/format", "bias/provenance",
        "consistency/position", "consistency/mode")


def config(**overrides) -> LlmJudgeConfig:
    return validate(apply_overrides(LlmJudgeConfig(), {**TINY, **overrides}))


def run(cfg: LlmJudgeConfig, checkpoint=None) -> LocalContext:
    ctx = LocalContext(STUDY.metrics, checkpoint=checkpoint)
    train_loop(cfg, ctx)
    return ctx


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)  # the loop sets train.threads


STEPS = {"teacher": [0], "sft": [3, 4], "sft_swap": [3, 4], "sft_dpo": [3, 6, 8],
         "fairjudge": [3, 6, 9, 12], "plain_rl": [3, 6, 9, 12], "joint": [3, 6, 9, 12]}
LAST_STAGE = {"sft": 0, "sft_swap": 1, "sft_dpo": 2, "fairjudge": 3, "plain_rl": 3, "joint": 4}


@pytest.mark.parametrize("arm", ARMS)
def test_every_arm_reports_every_metric_on_its_stages(arm):
    ctx = run(config(**{"arm.name": arm}))
    assert [r["train/step"] for r in ctx.reports] == STEPS[arm]
    last = ctx.reports[-1]
    for key in KEYS:
        assert math.isfinite(last[key]), key
        assert -0.5 <= last[key] <= 1.0, key
    # the test set is cue-balanced: the oracle's biases are exactly 0 on it
    for cue in ("position", "length", "format", "provenance"):
        assert last[f"bias/{cue}_oracle"] == 0.0
    if arm != "teacher":
        assert last["train/stage"] == LAST_STAGE[arm]
        assert set(ctx.last_checkpoint) >= {"model", "optimizer", "schedule", "generator"}


def test_the_teacher_arm_reports_the_teachers_own_verdicts():
    cfg = config(**{"arm.name": "teacher", "train.seed": 3, "world.n_test": 300})
    last = run(cfg).reports[-1]
    # rebuilt by hand from the seed layout: test pairs are seed s + 1 with cues mirrored,
    # the teacher's verdicts on them seeds s + 20 (as shown) and s + 21 (swapped)
    s = 3 * SEED_STRIDE
    test = cue_balanced(make_world(300, seed=s + 1, n_digits=3, max_pad=2))
    v, v_swapped = biased_teacher(test, seed=s + 20), biased_teacher(test.swap(), seed=s + 21)
    assert last["bias/position"] == pytest.approx(position_bias(v, v_swapped))
    assert last["consistency/position"] == pytest.approx(position_consistency(v, v_swapped))
    assert last["eval/agreement"] == pytest.approx(
        agreement(np.concatenate([v, v_swapped]), np.concatenate([test.label,
                                                                   test.swap().label])))
    assert last["bias/position"] > 0.05  # the teacher leans to the first shown


def test_the_consensus_cancels_position_and_padding_by_hand():
    # codes: 0 first wins, 1 second wins, 2 tie; each row: as shown, swapped, padded, both
    rows = [([0, 0, 0, 0], 2),   # each order prefers the first shown: a tie
            ([0, 1, 1, 0], 2),   # the longer (first as shown) wins each time: a tie
            ([0, 1, 0, 1], 0),   # the same response wins every presentation
            ([0, 2, 0, 2], 0),   # mean 1/2: the first
            ([2, 0, 2, 0], 1),   # mean -1/2: the second
            ([0, 2, 2, 2], 2)]   # mean 1/4: not past 1/4, a tie
    verdicts = np.array([r for r, _ in rows]).T
    assert consensus(*verdicts).tolist() == [c for _, c in rows]


def test_dpo_preferences_are_shown_in_all_four_presentations():
    cfg = config()
    data = build_data(cfg, torch.device("cpu"))
    m = len(data.chosen) // 4
    assert m > 0 and len(data.chosen) == 4 * m
    chosen, rejected = data.chosen.numpy(), data.rejected.numpy()
    assert (chosen != rejected).all()
    mirror = np.array([1, 0, 2])
    assert (chosen[m:2 * m] == mirror[chosen[:m]]).all()
    assert (rejected[2 * m:] == rejected[:2 * m]).all()
    # as many rejected "first" as rejected "second": no position rides on the preferences
    assert (rejected == 0).sum() == (rejected == 1).sum()
    # the blocks: the same training pairs as shown, swapped, re-padded, re-padded and swapped
    train = data.train
    rows: dict[tuple, list[int]] = {}
    for i, t in enumerate(train.tokens):
        rows.setdefault(tuple(t), []).append(i)
    matches = [rows[tuple(t)] for t in data.dpo_tokens[:m].numpy()]  # equal renderings
    index = np.array([match[0] for match in matches])
    padded = train.with_cues(length=train.length[:, ::-1])
    for block, shown in enumerate((train, train.swap(), padded, padded.swap())):
        assert (data.dpo_tokens[block * m:(block + 1) * m].numpy()
                == shown.tokens[index]).all(), block
    # the rejected verdict is the teacher's as shown: the label it gave those pairs
    y = data.y.numpy()
    assert all(r in y[match] for r, match in zip(rejected[:m], matches, strict=True))


@pytest.mark.parametrize("backbone", ["tiny", "hf"])
def test_the_map_chunks_rebuild_the_trials_judge(backbone, tmp_path):
    """Evaluation runs on judges rebuilt from the state in each ``ctx.map`` item: the same
    verdicts and scores as the trial's own judge. hf is the paper profile's backbone: a
    local checkpoint folder (a tiny random GPT-2 saved here)."""
    overrides = {"arm.name": "sft"}
    if backbone == "hf":
        transformers = pytest.importorskip("transformers")
        torch.manual_seed(0)
        transformers.GPT2Model(transformers.GPT2Config(
            vocab_size=32, n_positions=32, n_embd=16, n_layer=1, n_head=2, bos_token_id=0,
            eos_token_id=0)
        ).save_pretrained(tmp_path)
        overrides.update({"judge.backbone": "hf", "judge.checkpoint": str(tmp_path)})
    cfg = config(**overrides)
    data = build_data(cfg, torch.device("cpu"))
    spec = judge_spec(cfg, data)
    torch.manual_seed(1)
    judge = build_judge(spec).eval()
    pairs, point = data.test.tokens, data.test.point_tokens[:, 0]
    state = {k: v.clone() for k, v in judge.state_dict().items()}
    verdicts, scores = judge_chunk((state, spec, pairs, point))
    assert np.array_equal(verdicts, judge.judge(torch.as_tensor(pairs)).numpy())
    assert np.array_equal(scores, judge.score(torch.as_tensor(point)).numpy())
    if backbone == "hf":
        assert any(k.startswith("encoder.") for k in state)
        last = run(cfg).reports[-1]
        assert all(math.isfinite(last[k]) for k in KEYS)


class _Crash(LocalContext):
    """A context whose trial dies right after its ``after``-th report."""

    def __init__(self, *args, after: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.after = after

    def _send(self, metrics, checkpoint):
        super()._send(metrics, checkpoint)
        if len(self.reports) == self.after:
            raise RuntimeError("node lost")


@pytest.mark.parametrize("after", [2, 3])  # dies at step 6 (mid-DPO) or 9 (mid-RL)
def test_a_resumed_trial_ends_where_an_uninterrupted_one_does(after):
    cfg = config(**{"arm.name": "fairjudge"})
    full = run(cfg)
    crashed = _Crash(STUDY.metrics, after=after)
    with pytest.raises(RuntimeError, match="node lost"):
        train_loop(cfg, crashed)
    resumed = run(cfg, checkpoint=crashed.last_checkpoint)
    assert [r["train/step"] for r in resumed.reports] == [3, 6, 9, 12][after:]
    for got, want in zip(resumed.reports, full.reports[after:], strict=True):
        for key in (*KEYS, "train/loss"):
            assert got[key] == want[key], key
    for name, tensor in full.last_checkpoint["model"].items():
        assert torch.equal(resumed.last_checkpoint["model"][name], tensor), name


# ----------------------------------------------------------------------------- analysis
GOOD = {
    "sft": {"eval/agreement": 0.77, "eval/macro_f1": 0.67, "eval/tie_rate": 0.14,
            "bias/position": 0.13, "bias/length": 0.08, "consistency/position": 0.62,
            "consistency/mode": 0.78, "eval/base_agreement": 0.72},
    "fairjudge": {"eval/agreement": 0.99, "eval/macro_f1": 0.99, "eval/tie_rate": 0.15,
                  "bias/position": 0.0, "bias/length": 0.005, "consistency/position": 0.99,
                  "consistency/mode": 0.99, "eval/base_agreement": 0.99},
    "plain_rl": {"eval/agreement": 0.84, "eval/macro_f1": 0.6, "eval/tie_rate": 0.01,
                 "bias/position": 0.05, "bias/length": 0.07, "consistency/position": 0.9,
                 "consistency/mode": 0.84, "eval/base_agreement": 0.82},
    "joint": {"eval/agreement": 0.88, "eval/macro_f1": 0.83, "eval/tie_rate": 0.13,
              "bias/position": 0.08, "bias/length": 0.09, "consistency/position": 0.77,
              "consistency/mode": 0.88, "eval/base_agreement": 0.97},
}


def _results(changes: dict[str, dict[str, float]] | None = None,
             arms: tuple[str, ...] = tuple(GOOD)) -> RunResults:
    rng = np.random.default_rng(0)
    trials = []
    for arm in arms:
        for seed in range(8):
            metrics = {**GOOD[arm], **(changes or {}).get(arm, {})}
            metrics = {k: v + 0.005 * rng.standard_normal() if k.startswith(
                ("eval/agreement", "consistency")) else v for k, v in metrics.items()}
            metrics.update({"eval/majority_rate": 0.42, "bias/length_oracle": 0.0,
                            "bias/position_oracle": 0.0, "data/teacher_agreement": 0.8})
            settings = {"arm.name": arm, "train.seed": seed, "judge.d_model": 64}
            trials.append(TrialRecord(f"{arm}{seed}", settings, "TERMINATED", [metrics],
                                      config=settings))
    return RunResults(Path("."), {}, trials)


def _claim(analysis, claim_id: str):
    return next(c for c in analysis.claims if c.statement.startswith(f"{claim_id}:"))


def test_the_claims_read_as_the_issue_states_them(tmp_path):
    good = analyze(_results(), tmp_path)
    for claim_id in ("J1a", "J1b", "J2", "J3", "J4", "J5", "J6a", "J6b", "J6c", "J7a",
                     "J7b", "J7c", "J7d"):
        assert _claim(good, claim_id).verdict == "supported", claim_id
    assert "Holm" in _claim(good, "J2").test and _claim(good, "J5").n == 8
    assert [c.verdict for c in good.claims[-4:]] == ["not run"] * 4
    assert all("generated judging world" in c.scope and "TinyJudge d=64" in c.scope
               for c in good.claims if c.verdict != "not run")
    assert (tmp_path / "bias_vs_agreement.png").exists()
    assert [row[0] for row in good.tables[0].rows] == ["sft", "fairjudge", "plain_rl", "joint"]


def test_a_tie_always_judge_fails_the_tie_rate_gate(tmp_path):
    ties = analyze(_results({"fairjudge": {"eval/tie_rate": 0.5}}), tmp_path)
    for claim_id in ("J2", "J6a", "J7b"):
        row = _claim(ties, claim_id)
        assert row.verdict == "precondition failed", claim_id
        assert "tie rate 0.500" in row.note
    assert _claim(ties, "J5").verdict == "supported"  # J5 is not gated by ties


def test_an_sft_judge_that_learned_no_bias_gates_the_bias_claims(tmp_path):
    unbiased = analyze(_results({"sft": {"bias/position": 0.01, "bias/length": 0.0}}),
                       tmp_path)
    for claim_id in ("J1a", "J2", "J3", "J4", "J6b"):
        row = _claim(unbiased, claim_id)
        assert row.verdict == "precondition failed", claim_id
        assert "learned the teacher's bias" in row.note
    assert _claim(unbiased, "J7a").verdict == "supported"  # joint's gates do not read SFT
    # an SFT judge at the majority-class rate gates every fairjudge-vs-sft claim
    chance = analyze(_results({"sft": {"eval/agreement": 0.45}}), tmp_path)
    assert _claim(chance, "J5").verdict == "precondition failed"
    assert "above the majority-class rate" in _claim(chance, "J5").note


def test_an_arm_the_run_lacks_is_a_missing_claim(tmp_path):
    quick = analyze(_results(arms=("sft", "fairjudge", "plain_rl")), tmp_path)
    j7 = _claim(quick, "J7")
    assert j7.verdict.startswith("inconclusive") and "no joint trials" in j7.note
    assert _claim(quick, "J6a").verdict == "supported"


# ----------------------------------------------------------------------------- CLI
def test_bad_input_is_one_line(tmp_path, capsys):
    assert main(["run", "llm_judge", "--in-process", "--set", "arm.name=oracle",
                 "--storage", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "arm.name" in err[0]
    missing = tmp_path / "no_checkpoint"
    assert main(["run", "llm_judge", "--in-process", "--set", "judge.backbone=hf", "--set",
                 f"judge.checkpoint={missing}", "--storage", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(missing) in err[0]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["run", "llm_judge", "--in-process", "--set", "judge.backbone=hf", "--set",
                 f"judge.checkpoint={empty}", "--storage", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "config.json" in err[0] and str(empty) in err[0]


@pytest.mark.ray
def test_a_sweep_through_the_cli_reads_every_claim(tmp_path, ray_session):
    space = tmp_path / "space.yaml"
    space.write_text("params:\n  arm.name: {grid: [sft, fairjudge, plain_rl]}\n"
                     "  train.seed: {grid: [0]}\n")
    assert main(["sweep", "llm_judge", "--profile", "quick", "--space", str(space),
                 "--storage", str(tmp_path / "runs"), "--name", "q",
                 *[a for k, v in TINY.items() for a in ("--set", f"{k}={v}")]]) == 0
    run_dir = tmp_path / "runs" / "q"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["counts"]["finished"] == 3, summary["counts"]
    verdicts = {c["statement"].split(":")[0]: c["verdict"] for c in summary["claims"]}
    assert {"J1a", "J2", "J3", "J4", "J5", "J6a", "J7"} <= set(verdicts)
    assert verdicts["J7"].startswith("inconclusive")  # no joint arm in this run
    assert sum(v == "not run" for v in verdicts.values()) == 4
    assert all(c["scope"] for c in summary["claims"])
    assert (run_dir / "figures" / "bias_vs_agreement.png").exists()
