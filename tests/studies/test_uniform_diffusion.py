"""The uniform_diffusion study: the loop without Ray (metrics, samples in the checkpoint,
resume), the validation NELBO's common noise, the claims' preconditions on synthetic
trials, bad input as one line, and a sweep through the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from raystudy import LocalContext, RunResults, TrialRecord
from raystudy.cli import main
from raystudy.errors import ConfigError, DataError
from raystudy.platform.configuration.config import apply_overrides, validate
from raystudy.studies.uniform_diffusion.analysis import analyze
from raystudy.studies.uniform_diffusion.config import UniformDiffusionConfig
from raystudy.studies.uniform_diffusion.data import corpus_of
from raystudy.studies.uniform_diffusion.recipe import STUDY, train_loop, validation_nelbo

TINY = {"data.vocab_size": 8, "data.seq_len": 8, "model.d_model": 16, "model.n_layers": 1,
        "model.n_heads": 2, "train.steps": 8, "train.eval_every": 4, "train.batch_size": 8,
        "train.warmup": 2, "eval.n_samples": 16, "eval.sample_steps": [2, 4],
        "eval.nelbo_t_grid": 4, "eval.val_sequences": 16, "eval.timing_repeats": 1}


def config(**overrides) -> UniformDiffusionConfig:
    return validate(apply_overrides(UniformDiffusionConfig(), {**TINY, **overrides}))


def run(cfg: UniformDiffusionConfig, checkpoint=None) -> LocalContext:
    ctx = LocalContext(STUDY.metrics, checkpoint=checkpoint)
    train_loop(cfg, ctx)
    return ctx


@pytest.mark.parametrize("loss", ["nelbo", "simple", "simple_reg"])
def test_the_loop_reports_every_metric_and_keeps_its_samples(loss):
    ctx = run(config(**{"loss.name": loss}))
    assert [r["train/step"] for r in ctx.reports] == [4, 8]
    last = ctx.reports[-1]
    for key in ("eval/nelbo", "eval/gen_nll@4", "eval/entropy@2", "eval/bigram_js@4",
                "data/entropy", "data/js_floor", "time/loss_ms_nelbo", "time/loss_ms_simple"):
        assert math.isfinite(last[key]), key
    assert 0 < last["data/entropy"] < math.log(8)
    samples = ctx.last_checkpoint["samples@4"]
    assert samples.shape == (16, 8) and samples.min() >= 0 and samples.max() < 8


def test_a_resumed_trial_ends_where_an_uninterrupted_one_does():
    full = run(config())
    part = run(config(**{"train.steps": 4}))
    resumed = run(config(), checkpoint=part.last_checkpoint)
    assert [r["train/step"] for r in resumed.reports] == [8]
    assert resumed.reports[-1]["eval/nelbo"] == pytest.approx(full.reports[-1]["eval/nelbo"])
    assert resumed.reports[-1]["eval/gen_nll@4"] == pytest.approx(
        full.reports[-1]["eval/gen_nll@4"])


def test_the_validation_nelbo_uses_common_noise_and_bounds_the_entropy():
    import torch

    from raystudy.algorithms.models import Denoiser

    cfg = config()
    corpus = corpus_of(cfg.data, 64)
    torch.manual_seed(0)
    model = Denoiser(8, 8, 16, 1, 2)
    first, se = validation_nelbo(model, corpus.val, 8)
    assert validation_nelbo(model, corpus.val, 8) == (first, se)  # the same noise each time
    # an untrained model's bound lies well above the data's entropy
    assert first > corpus.source.entropy(8) + 3 * se


def _trial(trial_id: str, name: str, mask: str, seed: int, gen_nll: float,
           nelbo: float = 1.0, entropy_share: float = 1.0, **extra) -> TrialRecord:
    metrics = {"eval/gen_nll@32": gen_nll, "eval/entropy@32": 2.0 * entropy_share,
               "eval/bigram_js@32": 0.01, "eval/nelbo": nelbo, "eval/nelbo_se": 0.01,
               "data/entropy": 0.9, "data/true_sample_entropy": 2.0, "data/js_floor": 0.005,
               "data/true_gen_nll": 0.905, "data/true_gen_nll_se": 0.01,
               "time/loss_ms_nelbo": 3.0 + seed * 0.01, "time/loss_ms_simple": 2.0}
    settings = {"loss.name": name, "loss.mask": mask, "train.seed": seed,
                "data.vocab_size": 32, "data.seq_len": 32, "data.source": "markov", **extra}
    return TrialRecord(trial_id, settings, "TERMINATED", [metrics], config=settings)


def _results(nelbo_bound: float = 1.0, collapse: float = 1.0) -> RunResults:
    rng = np.random.default_rng(0)
    trials = []
    for seed in range(8):
        base = 1.2 + 0.05 * rng.standard_normal()
        trials.append(_trial(f"n{seed}", "nelbo", "changed", seed, base, nelbo=nelbo_bound))
        trials.append(_trial(f"m{seed}", "simple", "moved", seed, base + 0.001))
        trials.append(_trial(f"c{seed}", "simple", "changed", seed, base + 0.3,
                             entropy_share=collapse))
        trials.append(_trial(f"r{seed}", "simple_reg", "moved", seed, base - 0.1,
                             **{"loss.reg": "mean_logp", "loss.reg_weight": 0.01}))
    return RunResults(Path("."), {}, trials)


def _claim(analysis, prefix: str, case: str = ""):
    return next(c for c in analysis.claims if c.statement.startswith(prefix) and case in
                c.statement)


def test_the_claims_read_their_preconditions(tmp_path):
    good = analyze(_results(), tmp_path)
    assert _claim(good, "U1", "mask moved").verdict == "supported"
    assert _claim(good, "U1", "mask changed").verdict == "contradicted"
    assert _claim(good, "U3").verdict == "supported"
    assert _claim(good, "U4").verdict == "supported"
    # no selection seeds and no recorded selection: U2 cannot be read
    u2 = _claim(good, "U2")
    assert u2.verdict == "precondition failed" and "selection" in u2.note
    assert [c.verdict for c in good.claims[-2:]] == ["not run", "not run"]
    assert all("generated" in c.scope for c in good.claims if c.verdict != "not run")
    # a baseline that never learned the data: U1 reads precondition failed, not supported
    unlearned = analyze(_results(nelbo_bound=3.4), tmp_path)
    row = _claim(unlearned, "U1", "mask moved")
    assert row.verdict == "precondition failed" and "val NELBO 3.400" in row.note
    # a collapsed arm gates the claims that read it
    collapsed = analyze(_results(collapse=0.5), tmp_path)
    assert _claim(collapsed, "U4").verdict == "precondition failed"
    assert _claim(collapsed, "U1", "mask moved").verdict == "supported"


def test_the_regulariser_is_chosen_on_selection_seeds_of_the_run(tmp_path):
    results = _results()
    for seed in (100, 101, 102):
        for weight, offset in ((0.01, 0.0), (0.1, 0.5)):
            results.trials.append(_trial(f"s{seed}{weight}", "simple_reg", "moved", seed,
                                         1.0 + offset, **{"loss.reg": "mean_logp",
                                                          "loss.reg_weight": weight}))
    analysis = analyze(results, tmp_path)
    u2 = _claim(analysis, "U2")
    assert u2.verdict == "supported" and u2.n == 8
    assert any("weight 0.01" in p.evidence for p in u2.preconditions)
    table = next(t for t in analysis.tables if t.title.startswith("Regulariser selection"))
    assert [(r[0], r[1], r[2], r[5]) for r in table.rows] == [
        ("mean_logp", 0.01, 3, "yes"), ("mean_logp", 0.1, 3, "")]
    assert "the grid's smallest: past it was not tried" in table.note
    arms = next(t for t in analysis.tables if t.title.startswith("Metrics per arm"))
    assert {r[0] for r in arms.rows} >= {"simple_reg/moved (mean_logp, 0.01)", "nelbo"}
    assert all(r[2] == 8 for r in arms.rows)  # the selection seeds are no arm's
    # read with a run whose claim trials used another regulariser: U2 reads only the chosen
    for t in list(results.trials):
        if t.setting("loss.name") == "simple_reg" and t.setting("train.seed") < 100:
            results.trials.append(_trial(t.trial_id + "-other", "simple_reg",
                                         t.setting("loss.mask"), t.setting("train.seed"),
                                         9.0, **{"loss.reg": "entropy",
                                                 "loss.reg_weight": 0.001}))
    again = analyze(results, tmp_path)
    assert _claim(again, "U2").effect_size == u2.effect_size


def test_bad_input_is_one_line(tmp_path, capsys):
    with pytest.raises(ConfigError, match="loss.name"):
        config(**{"loss.name": "cross_entropy"})
    assert main(["run", "uniform_diffusion", "--in-process", "--set", "data.source=tokens",
                 "--set", f"data.path={tmp_path / 'none'}", "--storage", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "make-tokens" in err[0]


def markov_token_folder(folder: Path, vocab_size: int = 8, seq_len: int = 16):
    """A token folder of Markov-chain rows (train.npy, val.npy) and the chain itself: text
    whose likelihood is known exactly."""
    import torch

    from raystudy.algorithms.discrete_diffusion import MarkovSource

    source = MarkovSource(vocab_size, concentration=0.2, seed=3)
    folder.mkdir(parents=True, exist_ok=True)
    for name, n, seed in (("train", 3000, 0), ("val", 400, 1)):
        rows = source.sample(n, seq_len, generator=torch.Generator().manual_seed(seed))
        np.save(folder / f"{name}.npy", rows.numpy().astype(np.int32))
    return source


def test_the_ar_evaluator_scores_text_as_the_exact_likelihood_does(tmp_path):
    """Trained on Markov rows, the evaluator's NLL of held-out rows (positions 2..L) comes
    within 0.06 nats/token of the chain's exact conditional NLL of the same positions."""
    import torch

    from raystudy.studies.uniform_diffusion.data import train_evaluator
    from raystudy.studies.uniform_diffusion.evaluator import load_ar_evaluator, score

    source = markov_token_folder(tmp_path / "tok")
    file, meta = train_evaluator(str(tmp_path / "tok"), 16, steps=300, d_model=32, n_layers=1,
                                 n_heads=2, batch_size=64, lr=3e-3)
    assert file == tmp_path / "tok" / "ar_evaluator_L16.pt" and meta["vocab_size"] == 8
    val = torch.from_numpy(np.load(tmp_path / "tok" / "val.npy").astype(np.int64))
    first = torch.log(torch.from_numpy(source.stationary))[val[:, 0]]   # the unscored token
    exact_nll = float(-(source.log_prob(val) - first).mean()) / 15
    model, _ = load_ar_evaluator(str(file), 8, 16)
    assert abs(float(score(model, val).mean()) - exact_nll) < 0.06
    assert abs(meta["val_nll"] - exact_nll) < 0.06
    with pytest.raises(DataError, match="trained for V = 8"):
        load_ar_evaluator(str(file), 9, 16)


def test_a_text_run_is_read_under_the_ar_evaluator(tmp_path, capsys):
    from raystudy.studies.uniform_diffusion.data import train_evaluator

    markov_token_folder(tmp_path / "tok")
    file, _ = train_evaluator(str(tmp_path / "tok"), 8, steps=20, d_model=16, n_layers=1,
                              n_heads=2)
    text = {**TINY, "data.source": "tokens", "data.path": str(tmp_path / "tok"),
            "eval.ar_evaluator": str(file)}
    last = run(config(**text)).reports[-1]
    assert last["eval/gen_ppl_ar@4"] == pytest.approx(math.exp(last["eval/gen_nll_ar@4"]))
    assert 1 < last["eval/gen_ppl_ar@4"] and 1 < last["data/val_ppl_ar"] < 8 + 1e-9
    assert "eval/gen_nll@4" not in last                  # text has no exact likelihood
    trials = [TrialRecord(f"t{i}", {"loss.name": name, "train.seed": 0, **text}, "TERMINATED",
                          [{**last, "eval/gen_nll_ar@4": last["eval/gen_nll_ar@4"] + i}],
                          config={"loss.name": name, "train.seed": 0, **text})
              for i, name in enumerate(["nelbo", "simple"])]
    analysis = analyze(RunResults(Path("."), {}, trials), tmp_path)
    u1 = _claim(analysis, "U1")
    assert u1.effect.startswith("Gen NLL under the AR evaluator")
    assert "AR evaluator ar_evaluator_L8.pt, not GPT-2 Large" in u1.scope
    assert any("unigram" in p.statement for p in u1.preconditions)
    assert analysis.tables[0].columns == ["arm", "S", "trials", "entropy",
                                          "Gen PPL (AR evaluator)", "val NELBO"]
    # the evaluator's own bad input: one line, exit code 2
    assert main(["data", "train-ar-evaluator", str(tmp_path / "none"), "--seq-len", "8"]) == 2
    assert main(["run", "uniform_diffusion", "--in-process", "--storage", str(tmp_path),
                 "--set", f"eval.ar_evaluator={tmp_path / 'none.pt'}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "the token folder" in err[0] and "make-tokens" in err[0]
    assert "none.pt not found (train one with: raystudy data train-ar-evaluator" in err[1]


@pytest.mark.ray
def test_a_sweep_through_the_cli_reads_every_claim(tmp_path, ray_session):
    space = tmp_path / "space.yaml"
    space.write_text("params:\n  loss.name: {grid: [nelbo, simple]}\n"
                     "  loss.mask: {grid: [changed, moved]}\n  train.seed: {grid: [0]}\n")
    assert main(["sweep", "uniform_diffusion", "--profile", "quick", "--space", str(space),
                 "--storage", str(tmp_path / "runs"), "--name", "q",
                 *[a for k, v in TINY.items() for a in ("--set", f"{k}={v}")]]) == 0
    run_dir = tmp_path / "runs" / "q"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["counts"]["finished"] == 4, summary["counts"]
    verdicts = {c["statement"].split(":")[0]: c["verdict"] for c in summary["claims"]}
    assert {"U1", "U2", "U3"} <= set(verdicts) and verdicts["U2"].startswith("inconclusive")
    assert all(c["scope"] for c in summary["claims"])
    assert (run_dir / "figures" / "gen_nll.png").exists()
