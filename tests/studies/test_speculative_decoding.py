"""The speculative_decoding study: the loop without Ray (every domain's acceptance measures
against the algorithm layer run on the same prompts, exact greedy SD, the unigram entropy
against scipy's, a resume that neither retrains nor re-decodes), the file source and the
paper profile's Hugging Face path on tiny checkpoints, the measures and subset rules by
hand, the claims on synthetic trials with their gates, bad input as one line, and a sweep
through the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.stats import entropy

from raystudy import LocalContext, RunResults, TrialRecord
from raystudy.algorithms.speculative import (
    ByteNGramDraft,
    domain_data,
    domain_texts,
    speculative_generate,
)
from raystudy.cli import main
from raystudy.errors import ConfigError, MissingDataError
from raystudy.platform.configuration.config import apply_overrides, validate
from raystudy.studies.speculative_decoding import recipe
from raystudy.studies.speculative_decoding.analysis import analyze
from raystudy.studies.speculative_decoding.config import SpeculativeConfig
from raystudy.studies.speculative_decoding.data import check_data, mixture
from raystudy.studies.speculative_decoding.recipe import (
    STUDY,
    build_gpt,
    domain_metrics,
    lr_at,
    train_loop,
)
from raystudy.studies.speculative_decoding.subsets import nearest, subset_error, subset_errors

TINY = {"train.steps": 20, "train.draft_steps": 10, "train.batch_size": 8,
        "model.d_model": 32, "model.n_heads": 2, "model.draft_d_model": 16,
        "data.train_bytes": 60_000, "data.held_out_bytes": 4096, "data.n_prompts": 6,
        "data.prompt_len": 24, "decode.new_tokens": 12, "decode.gamma": 3,
        "prune.vocab": 48, "subset.draws": 5}
"""Tiny GPTs (d = 32 and 16) trained for 20 and 10 steps on 60 kB, 6 prompts of 24 bytes
per domain, 12 new tokens at gamma 3: about 2 s of CPU per trial."""


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _config(**overrides) -> SpeculativeConfig:
    return validate(apply_overrides(SpeculativeConfig(), {**TINY, **overrides}))


def _run(cfg: SpeculativeConfig, checkpoint=None) -> LocalContext:
    ctx = LocalContext(STUDY.metrics, checkpoint=checkpoint)
    train_loop(cfg, ctx)
    return ctx


# ----------------------------------------------------------------------------- the loop
@pytest.mark.parametrize("kind", ["gpt", "ngram"])
def test_the_loop_measures_every_domain_as_the_algorithm_layer_does(kind):
    ctx = _run(_config(**{"draft.kind": kind}))
    steps = ["code", "prose", "longtail", "random", "pruned code", "pruned longtail"]
    assert [r["progress/step"] for r in ctx.reports] == list(range(1, len(steps) + 1))
    last = ctx.reports[-1]
    assert last["eval/greedy_mismatches"] == 0
    for prefix in ("eval/code/", "eval/prose/", "eval/longtail/", "eval/random/",
                   "pruned/code/", "pruned/longtail/"):
        steps_by_length = [last[f"{prefix}steps_{n}"] for n in range(1, 5)]
        # untruncated step lengths: the histogram's mean is the pooled AL, one step per call
        assert last[prefix + "al_pooled"] == pytest.approx(
            np.dot(range(1, 5), steps_by_length) / sum(steps_by_length))
        assert sum(steps_by_length) == pytest.approx(
            last[prefix + "target_calls_per_token"] * 6 * 12)
        assert 1 <= last[prefix + "al"] <= 4 and last[prefix + "prompts"] == 6
    assert "pruned/prose/al" not in last and last["data/prune_vocab"] == 48
    assert last["subset/pool"] == 18 and last["subset/size"] == 2
    assert last["eval/al_real"] == pytest.approx(
        np.mean([last[f"eval/{d}/al"] for d in ("code", "prose", "longtail")]))
    texts = domain_texts(60_000, held_out_bytes=4096)
    for d in ("code", "prose", "longtail"):
        assert last[f"data/{d}/unigram_bits"] == pytest.approx(
            entropy(np.bincount(texts[d][0], minlength=256), base=2))
    # the code prompts decoded again by the algorithm layer, with the trial's seeds
    weights = ctx.last_checkpoint["models"]
    target = build_gpt(_config().model, "target")
    target.load_state_dict(weights["target"])
    if kind == "gpt":
        draft = build_gpt(_config().model, "draft")
        draft.load_state_dict(weights["draft"])
    else:
        assert set(weights) == {"target"}
        draft = ByteNGramDraft(3).fit(mixture(_config().data))
    _, prompts = domain_data(0, train_bytes=60_000, n_prompts=6, prompt_len=24,
                             held_out_bytes=4096)
    lengths = [np.mean(speculative_generate(
        target.eval(), draft.eval(), p, 12, gamma=3,
        generator=torch.Generator().manual_seed(i)).accepted) + 1
        for i, p in enumerate(prompts["code"])]
    assert last["eval/code/al"] == pytest.approx(np.mean(lengths))


class _Crash(Exception):
    pass


class _Interrupted(LocalContext):
    """Dies right after the report that carries the second step's checkpoint."""

    def _send(self, metrics, checkpoint):
        super()._send(metrics, checkpoint)
        if checkpoint is not None and len(self.reports) == 2:
            raise _Crash


def _without_time(report: dict) -> dict:
    return {k: v for k, v in report.items() if "seconds" not in k}


def test_a_resumed_trial_neither_retrains_nor_redecodes(monkeypatch):
    cfg = _config()
    whole = _run(cfg)
    part = _Interrupted(STUDY.metrics)
    with pytest.raises(_Crash):
        train_loop(cfg, part)
    recipe.trained_gpt.cache_clear()

    def no_training(*args, **kwargs):
        raise AssertionError("a resumed trial trained a model")

    monkeypatch.setattr(recipe, "train_gpt", no_training)
    resumed = _run(cfg, checkpoint=part.last_checkpoint)
    assert [r["progress/step"] for r in resumed.reports] == [3, 4, 5, 6]
    assert _without_time(resumed.reports[-1]) == _without_time(whole.reports[-1])
    assert resumed.last_checkpoint["units"]["eval/code"] == part.last_checkpoint["units"][
        "eval/code"]


def test_the_file_source_renames_categories_and_decodes_each(tmp_path):
    rows = [{"category": c, "prompt": f"{c} number {i}: def f(x): return x + {i}"}
            for c in ("coding", "writing", "multilingual", "qa/rag") for i in range(8)]
    (tmp_path / "split.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    cfg = _config(**{"data.source": "file", "data.path": str(tmp_path), "data.n_prompts": 5,
                     "draft.kind": "ngram"})
    check_data(cfg)
    last = _run(cfg).reports[-1]
    for d in ("code", "prose", "longtail", "qa_rag", "random"):
        assert last[f"eval/{d}/prompts"] == 5, d
    assert last["subset/pool"] == 20 and "pruned/longtail/al" in last


def test_the_paper_path_decodes_tiny_hugging_face_checkpoints(tmp_path):
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(["def f(x):\n    return x + 1\n", "The quick brown fox."] * 8,
                                  trainers.BpeTrainer(
                                      vocab_size=300, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer)
    for name, seed in (("target", 0), ("draft", 1)):
        torch.manual_seed(seed)
        transformers.GPT2LMHeadModel(transformers.GPT2Config(
            vocab_size=len(fast), n_positions=64, n_embd=16, n_layer=1, n_head=2,
            bos_token_id=None, eos_token_id=None)).save_pretrained(tmp_path / name)
    fast.save_pretrained(tmp_path / "target")
    (tmp_path / "prompts").mkdir()
    rows = [{"category": c, "turns": [f"{c} {i}: def g(y): return y * {i}"]}
            for c in ("coding", "writing", "multilingual") for i in range(4)]
    (tmp_path / "prompts" / "a.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    cfg = _config(**{"model.source": "hf", "model.target": str(tmp_path / "target"),
                     "model.draft": str(tmp_path / "draft"), "data.source": "file",
                     "data.path": str(tmp_path / "prompts"), "data.n_prompts": 3,
                     "data.prompt_len": 16, "decode.new_tokens": 8, "prune.vocab": 100})
    check_data(cfg)
    ctx = _run(cfg)
    last = ctx.reports[-1]
    assert last["eval/greedy_mismatches"] == 0 and last["data/vocab"] == len(fast)
    assert last["eval/random/prompts"] == 3 and "pruned/code/al" in last
    assert "models" not in ctx.last_checkpoint     # loaded from disk, never checkpointed


# ----------------------------------------------------------------------------- by hand
def test_the_measures_and_the_subset_rules_by_hand():
    results = [{"accepted": [2, 0, 1], "target_calls": 3, "draft_calls": 6, "tokens": 6,
                "seconds": 0.6, "mismatch": 0},
               {"accepted": [2, 2], "target_calls": 2, "draft_calls": 4, "tokens": 6,
                "seconds": 0.3, "mismatch": 1}]
    m = domain_metrics(results, 2, "eval/x/")
    # step lengths 3, 1, 2, 3, 3
    assert m["eval/x/al"] == pytest.approx((2 + 3) / 2)
    assert m["eval/x/al_pooled"] == pytest.approx(12 / 5)
    assert [m[f"eval/x/steps_{n}"] for n in (1, 2, 3)] == [1, 1, 3]
    assert m["eval/x/conditional_1"] == pytest.approx(4 / 5)
    assert m["eval/x/conditional_2"] == pytest.approx(3 / 4)
    assert m["eval/x/joint_2"] == pytest.approx(3 / 5)
    assert m["eval/x/target_calls_per_token"] == pytest.approx(5 / 12)
    assert m["eval/x/seconds_per_token"] == pytest.approx(0.9 / 12)
    assert m["eval/x/greedy_mismatches"] == 1
    # a domain without a member is estimated by the whole subset's mean
    al, domains = np.array([1.0, 2.0, 3.0, 4.0]), np.array([0, 0, 1, 1])
    assert subset_error(al, domains, np.array([0])) == pytest.approx((0.5 + 2.5) / 2)
    assert subset_error(al, domains, np.array([1, 2])) == pytest.approx(0.5)
    # three domains, one tight cluster of prompts each, ALs 1.5 / 2.5 / 3.5
    rng = np.random.default_rng(0)
    domains = np.repeat([0, 1, 2], 20)
    embeddings = np.eye(3)[domains] + 0.05 * rng.random((60, 3))
    al = 1.5 + domains + 0.05 * rng.standard_normal(60)
    near = nearest(embeddings, 7, 6)
    assert near[0] == 7 and set(domains[near]) == {0}
    errors = subset_errors(al, domains, embeddings, 0.1, 10, seed=3)
    assert errors == subset_errors(al, domains, embeddings, 0.1, 10, seed=3)
    assert errors["diverse"] < 0.05 and errors["diverse"] < errors["random"] < errors[
        "near_duplicate"]
    assert lr_at(20, 600, 3e-3, 20) == pytest.approx(3e-3)
    assert lr_at(600, 600, 3e-3, 20) == pytest.approx(3e-4)


# ----------------------------------------------------------------------------- claims
BASE = {"code": 3.0, "prose": 2.7, "longtail": 2.4, "random": 3.2}
"""Planted ALs: S1's effect code - prose = 0.3, S2's random - mean(real) = 0.5."""


def _trial(kind: str, gamma: int, seed: int, **metrics) -> TrialRecord:
    noise = 0.05 * np.sin(seed + 1) + 0.1 * gamma + 0.5 * (kind == "gpt")   # shared by all
    values = {"eval/greedy_mismatches": 0.0, "subset/size": 7.0, "subset/pool": 72.0,
              "subset/diverse/abs_error": 0.10 + noise / 10,
              "subset/random/abs_error": 0.20 + noise / 10,
              "subset/near_duplicate/abs_error": 0.40 + noise / 10,
              "pruned/code/al": BASE["code"] + noise - 0.1,
              "pruned/longtail/al": BASE["longtail"] + noise - 0.6}
    for d, base in BASE.items():
        values |= {f"eval/{d}/al": base + noise, f"eval/{d}/al_pooled": base + noise,
                   f"eval/{d}/prompts": 24.0, f"eval/{d}/greedy_mismatches": 0.0,
                   f"eval/{d}/target_calls_per_token": 1 / (base + noise),
                   f"eval/{d}/seconds_per_token": 1e-3, f"eval/{d}/conditional_1": 0.7,
                   f"eval/{d}/bits_per_token": 9.0 if d == "random" else 3.0,
                   **{f"eval/{d}/steps_{n}": 10.0 * n for n in range(1, gamma + 2)}}
        if d != "random":
            values[f"data/{d}/unigram_bits"] = 4.5
            values[f"data/{d}/kept_share"] = 0.9 if d == "code" else 0.6
    values |= metrics
    settings = {"draft.kind": kind, "decode.gamma": gamma, "run.seed": seed,
                "model.source": "trained", "data.source": "stdlib", "run.device": "cpu",
                "prune.vocab": 64, "subset.draws": 20}
    return TrialRecord(f"{kind}-{gamma}-{seed}", settings, "TERMINATED", [values],
                       config=settings)


def _results(seeds: int = 8, **metrics) -> RunResults:
    return RunResults(Path("."), {}, [_trial(kind, gamma, seed, **metrics)
                                      for seed in range(seeds) for kind in ("gpt", "ngram")
                                      for gamma in (2, 4)])


def _claim(analysis, prefix: str, words: str = ""):
    return next(c for c in analysis.claims if c.statement.startswith(prefix)
                and words in c.statement)


def test_the_claims_pair_seeds_under_holm_and_name_their_scope(tmp_path):
    good = analyze(_results(), tmp_path)
    tested = [c for c in good.claims if c.verdict != "not run"]
    assert len(tested) == 8 and all(c.verdict == "supported" for c in tested)
    for kind in ("gpt", "ngram"):
        s1 = _claim(good, "S1", kind)
        assert s1.effect_size == pytest.approx(0.3) and s1.n == 8
        assert s1.p_value == pytest.approx(2 / 2**8) and "Holm" in s1.test
        s2 = _claim(good, "S2", kind)
        assert s2.effect_size == pytest.approx(0.5) and s2.p_value == pytest.approx(4 / 2**8)
        assert "two-sided" in s2.test and "overestimate" in s2.note
        assert _claim(good, "S4", kind).effect_size == pytest.approx(0.5)
    assert _claim(good, "S3", "random subset").effect_size == pytest.approx(0.1)
    assert _claim(good, "S3", "near-duplicate").effect_size == pytest.approx(0.3)
    assert [c.verdict for c in good.claims[-4:]] == ["not run"] * 4
    for c in tested:
        assert c.scope.startswith("in-house byte-level GPT target and draft on stdlib-derived "
                                  "domains, CPU, plain torch; not SPEED-Bench prompts")
        assert {p.holds for p in c.preconditions} == {True}
    assert [f.name for _, f in good.figures] == ["al_by_domain.png", "step_lengths.png",
                                                 "subset_errors.png"]
    assert all(f.stat().st_size > 5_000 for _, f in good.figures)
    assert len(good.tables[0].rows) == 4                       # 2 drafts x 2 gammas


def test_each_gate_fails_the_claims_that_need_it(tmp_path):
    inexact = analyze(_results(**{"eval/greedy_mismatches": 1.0}), tmp_path)
    rows = [c for c in inexact.claims if c.verdict != "not run"]
    assert all(c.verdict == "precondition failed" and "SD is exact" in c.note for c in rows)
    untrained = analyze(_results(**{"eval/code/bits_per_token": 4.8}), tmp_path)
    for prefix in ("S1", "S2", "S3", "S4"):
        row = _claim(untrained, prefix)
        assert row.verdict == "precondition failed" and "code 4.80 vs 4.50" in row.note
    blunt = analyze(_results(**{"pruned/longtail/al": BASE["longtail"] + 1.0}), tmp_path)
    row = _claim(blunt, "S4")
    assert row.verdict == "precondition failed" and "lowers the AL on longtail" in row.note
    assert _claim(blunt, "S1").verdict == "supported"


def test_three_seeds_stay_inconclusive_and_a_missing_domain_is_a_row(tmp_path):
    few = analyze(_results(seeds=3), tmp_path)
    assert all(c.verdict == "inconclusive at this scale" for c in few.claims
               if c.verdict != "not run")
    results = _results()
    for t in results.trials:
        t.history[-1] = {k: v for k, v in t.last.items() if "/random/al" not in k
                         and not k.startswith("pruned/")}
    partial = analyze(results, tmp_path)
    for prefix in ("S2", "S4"):
        row = _claim(partial, prefix)
        assert row.n == 0 and row.verdict == "inconclusive at this scale", row
    assert _claim(partial, "S1").verdict == "supported"


# ----------------------------------------------------------------------------- bad input
def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_bad_input_is_one_line(tmp_path, capsys):
    with pytest.raises(ConfigError, match="draft.kind=ngram"):    # before anything loads
        recipe.load_models(_config(**{"model.source": "hf", "draft.kind": "ngram"}), {},
                           torch.device("cpu"))
    with pytest.raises(ConfigError, match="model.d_model"):
        _config(**{"model.d_model": 30, "model.n_heads": 4})
    with pytest.raises(ConfigError, match="category=domain"):
        _config(**{"data.rename": "coding"})
    with pytest.raises(ConfigError, match="decode.gamma"):
        _config(**{"decode.gamma": 0})
    with pytest.raises(MissingDataError, match="model.target"):
        check_data(_config(**{"model.source": "hf"}))
    base = ["run", "speculative_decoding", "--in-process", "--storage", str(tmp_path / "runs")]
    assert main([*base, "--set", "model.source=hf", "--set",
                 f"model.target={tmp_path / 'none'}"]) == 2
    line = _one_line(capsys)
    assert "model.target" in line and "no such folder" in line
    assert main([*base, "--set", "data.source=file", "--set",
                 f"data.path={tmp_path / 'none'}"]) == 2
    line = _one_line(capsys)
    assert "no such folder" in line and "category" in line
    assert main([*base, "--set", "model.source=hf", "--set", "draft.kind=ngram"]) == 2
    assert "draft.kind=ngram needs model.source=trained" in _one_line(capsys)  # before loading
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "a.jsonl").write_text('{"category": "code", "prompt": "x"}\n{"text": 1}\n')
    assert main([*base, "--set", "data.source=file", "--set", f"data.path={tmp_path / 'bad'}"]) == 2
    assert "a.jsonl:2" in _one_line(capsys)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("*.json"))


# ----------------------------------------------------------------------------- sweep
@pytest.mark.ray
def test_a_sweep_through_the_cli_reads_every_claim(tmp_path, ray_session):
    space = tmp_path / "space.yaml"
    space.write_text("params:\n  draft.kind: {grid: [gpt, ngram]}\n  run.seed: {grid: [0]}\n")
    assert main(["sweep", "speculative_decoding", "--profile", "quick", "--space", str(space),
                 "--storage", str(tmp_path / "runs"), "--name", "q",
                 *[a for k, v in TINY.items() for a in ("--set", f"{k}={v}")]]) == 0
    run_dir = tmp_path / "runs" / "q"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["counts"]["finished"] == 2, summary["counts"]
    verdicts = [(c["statement"].split(":")[0], c["verdict"]) for c in summary["claims"]]
    assert {"S1", "S2", "S3", "S4"} <= {label for label, _ in verdicts}
    assert sum(v == "not run" for _, v in verdicts) == 4
    assert all(v in ("inconclusive at this scale", "precondition failed", "not run")
               for _, v in verdicts)   # one seed: too few for a verdict
    assert all(c["scope"] for c in summary["claims"])
    assert all(math.isfinite(c["effect_size"]) for c in summary["claims"]
               if c["statement"].startswith("S1"))
    for figure in ("al_by_domain.png", "step_lengths.png", "subset_errors.png"):
        assert (run_dir / "figures" / figure).exists()
