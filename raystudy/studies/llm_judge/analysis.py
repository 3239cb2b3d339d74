"""The llm_judge report: claims J1-J7 (paired over seeds, Holm within each family, gated by
the SFT judge having learned the teacher and its bias and by the tie rate), the paper's
regimes not run, a table of every metric per arm and a figure of bias against agreement."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

from raystudy import Analysis, Claim, RunResults, Table, TrialRecord, claims, save_figure
from raystudy.algorithms import stats

ABOVE_MAJORITY = 0.10
"""The SFT judge must beat the majority-class rate by this much (the issue's 10 points)."""
BIAS_FLOOR = 0.03
"""The SFT judge learned the teacher's bias when its |bias| (beyond the oracle's) exceeds
this: comparing the biases of a judge that learned nothing says nothing."""
TIE_CEILING = 0.3
"""The compared arms' tie rates must stay below it: a tie-always judge is swap-consistent."""
NON_INFERIORITY = 0.02
"""J5's margin: base-split agreement at most 2 points below SFT's (fixed before any run)."""

Value = Callable[[TrialRecord], float]


def arm_of(trial: TrialRecord) -> str:
    return str(trial.setting("arm.name", "fairjudge"))


def _metric(name: str) -> Value:
    return lambda t: t.metric(name)


def length_bias(trial: TrialRecord) -> float:
    """|length bias| beyond the oracle's on the same pairs (0 on a cue-balanced test set)."""
    return abs(trial.metric("bias/length") - trial.metric("bias/length_oracle"))


MEASURES: dict[str, tuple[str, Value, stats.Direction]] = {
    "agreement": ("agreement with the latent label", _metric("eval/agreement"), "greater"),
    "macro_f1": ("macro F1", _metric("eval/macro_f1"), "greater"),
    "position": ("position consistency", _metric("consistency/position"), "greater"),
    "length": ("|length bias| beyond the oracle's", length_bias, "less"),
    "mode": ("mode consistency", _metric("consistency/mode"), "greater"),
}
"""What the claims compare: (words, value of a trial, the better side)."""


def _by_seed(trials: list[TrialRecord], value: Value) -> dict[int, float]:
    seeds: dict[int, list[float]] = defaultdict(list)
    for t in trials:
        if math.isfinite(value(t)):
            seeds[int(t.setting("train.seed", 0))].append(value(t))
    return {seed: float(np.mean(v)) for seed, v in seeds.items()}


def _mean(trials: list[TrialRecord], value: Value) -> float:
    values = [value(t) for t in trials if math.isfinite(value(t))]
    return float(np.mean(values)) if values else math.nan


def compare(a: list[TrialRecord], b: list[TrialRecord], value: Value
            ) -> stats.PairedComparison:
    """a - b over the seeds both arms ran (two-sided sign-flip test)."""
    x, y = _by_seed(a, value), _by_seed(b, value)
    seeds = sorted(set(x) & set(y))
    return stats.paired_comparison([x[s] for s in seeds], [y[s] for s in seeds])


# ----------------------------------------------------------------------------- preconditions
def learned(name: str, trials: list[TrialRecord]) -> claims.Precondition:
    """The arm beats the majority-class rate by ABOVE_MAJORITY."""
    gain = _mean(trials, lambda t: t.metric("eval/agreement") - t.metric("eval/majority_rate"))
    return claims.Precondition(
        f"the {name} judge is above the majority-class rate by {ABOVE_MAJORITY:.0%}",
        bool(math.isfinite(gain) and gain >= ABOVE_MAJORITY),
        f"agreement - majority rate {gain:+.3f} over {len(trials)} trials" if trials else
        f"no {name} trial finished")


def learned_bias(trials: list[TrialRecord], which: str) -> claims.Precondition:
    """The SFT judge learned the teacher's ``which`` bias (position, length, or either)."""
    position = abs(_mean(trials, _metric("bias/position")))
    length = abs(_mean(trials, lambda t: t.metric("bias/length")
                       - t.metric("bias/length_oracle")))
    value = {"position": position, "length": length}.get(which, max(position, length))
    words = {"position": "position bias", "length": "length bias beyond the oracle's"}.get(
        which, "position or length bias")
    return claims.Precondition(
        f"the SFT judge learned the teacher's bias: |{words}| > {BIAS_FLOOR:g}",
        bool(math.isfinite(value) and value > BIAS_FLOOR),
        f"|position bias| {position:.3f}, |length bias - oracle| {length:.3f} over "
        f"{len(trials)} SFT trials" if trials else "no sft trial finished")


def few_ties(name: str, trials: list[TrialRecord]) -> claims.Precondition:
    """The arm's tie rate is below TIE_CEILING."""
    rate = _mean(trials, _metric("eval/tie_rate"))
    return claims.Precondition(
        f"the {name} judge's tie rate is below {TIE_CEILING:g} (no tie-always policy)",
        bool(math.isfinite(rate) and rate < TIE_CEILING),
        f"tie rate {rate:.3f} over {len(trials)} trials" if trials else f"no {name} trial")


# ----------------------------------------------------------------------------- claims
def family(label: str, method: str, baseline: str, measures: dict[str, str],
           arms: dict[str, list[TrialRecord]], scope: str,
           gates: Callable[[str], tuple[claims.Precondition, ...]]) -> list[Claim]:
    """``method`` against ``baseline`` on each of ``measures`` (claim id -> measure), Holm
    over them; ``gates(measure)`` are each member's preconditions."""
    if not arms.get(method) or not arms.get(baseline):
        return [claims.missing_claim(
            f"{label}: {method} beats {baseline}", "paired sign-flip over seeds, Holm",
            f"{method} - {baseline}", f"the run has no "
            f"{method if not arms.get(method) else baseline} trials", scope=scope)]
    tests = []
    for claim_id, measure in measures.items():
        words, value, side = MEASURES[measure]
        better = "higher" if side == "greater" else "lower"
        tests.append(claims.Test(
            f"{claim_id}: {method}'s {words} is {better} than {baseline}'s",
            f"{words}: {method} - {baseline}", compare(arms[method], arms[baseline], value),
            side, preconditions=gates(measure)))
    return claims.holm_family(tests, f"{len(tests)} measures, {method} vs {baseline}",
                              scope=scope)


def judge_claims(arms: dict[str, list[TrialRecord]], scope: str) -> list[Claim]:
    """J1-J7 as issue 53 states them, then the paper's regimes not run."""
    sft, fair = arms.get("sft", []), arms.get("fairjudge", [])
    sft_learned = learned("SFT", sft)
    bias_of = {"position": "position", "length": "length"}

    def gates_vs(other: str) -> Callable[[str], tuple[claims.Precondition, ...]]:
        return lambda measure: (sft_learned, learned_bias(sft, bias_of.get(measure, "any")),
                                few_ties("fairjudge", fair), few_ties(other, arms.get(other, [])))

    rows = family("J1-J4", "fairjudge", "sft", {"J1a": "agreement", "J1b": "macro_f1",
                                                "J2": "position", "J3": "length", "J4": "mode"},
                  arms, scope, gates_vs("sft"))
    if sft and fair:
        base = _metric("eval/base_agreement")
        x, y = _by_seed(fair, base), _by_seed(sft, base)
        seeds = sorted(set(x) & set(y))
        rows.append(claims.paired_claim(
            f"J5: no forgetting: fairjudge's agreement on the cue-free base split is "
            f"non-inferior to SFT's within {NON_INFERIORITY:g}",
            "base-split agreement: fairjudge - sft",
            stats.non_inferiority([x[s] for s in seeds], [y[s] for s in seeds],
                                  NON_INFERIORITY, "greater"), "greater",
            margin=NON_INFERIORITY, scope=scope, preconditions=(sft_learned,)))
    else:
        rows.append(claims.missing_claim(
            "J5: no forgetting on the cue-free base split", "non-inferiority over seeds",
            "base-split agreement: fairjudge - sft", "the run has no fairjudge or no sft "
            "trials", scope=scope))
    rows += family("J6", "fairjudge", "plain_rl", {"J6a": "position", "J6b": "length",
                                                   "J6c": "mode"}, arms, scope,
                   gates_vs("plain_rl"))
    joint = arms.get("joint", [])
    rows += family("J7", "fairjudge", "joint", {"J7a": "agreement", "J7b": "position",
                                                "J7c": "length", "J7d": "mode"}, arms, scope,
                   lambda measure: (learned("joint", joint), few_ties("fairjudge", fair),
                                    few_ties("joint", joint)))
    return rows + not_run_rows()


def not_run_rows() -> list[Claim]:
    no_llm = "no LLM and no text here: the judge is trained from scratch on a generated world"
    return [
        claims.not_run("FairJudge is competitive with or stronger than larger general-purpose "
                       "LLM judges", "LLM judges (GPT-4-class and open instruction-tuned)",
                       no_llm),
        claims.not_run("Judging adapts to task-specific rubrics across real domains",
                       "real-domain rubric adaptivity", no_llm + "; the world has one task"),
        claims.not_run("Agreement on PandaLM-test (0.7683), JudgeLM-test (78.82) and "
                       "Reward-Bench (84.79)", "PandaLM / JudgeLM / Reward-Bench test sets",
                       "the data are not placed and no judge here reads text (the paper "
                       "profile's backbone reads the generated world's tokens)"),
        claims.not_run("The multimodal judging results", "multimodal benchmarks", no_llm),
    ]


# ----------------------------------------------------------------------------- report
COLUMNS = [("agreement", "eval/agreement"), ("macro F1", "eval/macro_f1"),
           ("tie rate", "eval/tie_rate"), ("base agreement", "eval/base_agreement"),
           ("position bias", "bias/position"), ("length bias", "bias/length"),
           ("length (oracle)", "bias/length_oracle"), ("format bias", "bias/format"),
           ("format (oracle)", "bias/format_oracle"), ("provenance bias", "bias/provenance"),
           ("provenance (oracle)", "bias/provenance_oracle"),
           ("position consistency", "consistency/position"),
           ("mode consistency", "consistency/mode"), ("pointwise agreement",
                                                      "eval/point_agreement")]


def arms_table(arms: dict[str, list[TrialRecord]]) -> Table:
    rows = [[name, len(trials)] + [_mean(trials, _metric(key)) for _, key in COLUMNS]
            for name, trials in sorted(arms.items(), key=lambda kv: _order(kv[0]))]
    first = next(iter(arms.values()))
    return Table("Every metric per arm (means over seeds; test pairs in both orders)",
                 ["arm", "trials", *[c for c, _ in COLUMNS]], rows,
                 note=f"majority-class rate {_mean(first, _metric('eval/majority_rate')):.3f}; "
                      f"the teacher's agreement on the training pairs "
                      f"{_mean(first, _metric('data/teacher_agreement')):.3f}; the oracle's "
                      "position bias is 0 by construction")


def _order(name: str) -> int:
    order = ("teacher", "sft", "sft_swap", "sft_dpo", "fairjudge", "plain_rl", "joint")
    return order.index(name) if name in order else len(order)


def figures(arms: dict[str, list[TrialRecord]], figures_dir: Path) -> list[tuple[str, Path]]:
    """|Position bias| and |length bias| against agreement: each seed, and each arm's mean."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.6), layout="constrained")
    panels = fig.subplots(1, 2)
    for panel, (label, value) in zip(panels, (
            ("|position bias|", lambda t: abs(t.metric("bias/position"))),
            ("|length bias| beyond the oracle's", length_bias)), strict=True):
        for index, (name, trials) in enumerate(sorted(arms.items(),
                                                      key=lambda kv: _order(kv[0]))):
            color = f"C{index}"
            panel.scatter([t.metric("eval/agreement") for t in trials],
                          [value(t) for t in trials], s=12, alpha=0.5, color=color)
            panel.scatter([_mean(trials, _metric("eval/agreement"))], [_mean(trials, value)],
                          s=60, marker="D", color=color, label=name)
        panel.set(xlabel="agreement with the latent label", ylabel=label)
    panels[0].legend(fontsize=7)
    path = save_figure(fig, figures_dir / "bias_vs_agreement.png")
    return [("Bias against agreement per arm (small: seeds; diamonds: arm means)", path)]


def analyze(results: RunResults, figures_dir: Path) -> Analysis:
    trials = [t for t in results.trials if t.history]
    if not trials:
        return Analysis(notes=["No trial reported: nothing to analyse."])
    arms: dict[str, list[TrialRecord]] = defaultdict(list)
    for t in trials:
        arms[arm_of(t)].append(t)
    first = trials[0]
    device = "GPU" if any(t.metric("run/cuda", 0.0) > 0 for t in trials) else "CPU"
    judge = (f"Hugging Face backbone {first.setting('judge.checkpoint', '?')}"
             if first.setting("judge.backbone", "tiny") == "hf" else
             f"TinyJudge d={first.setting('judge.d_model', 64)} x "
             f"{first.setting('judge.n_layers', 2)} layers")
    scope = (f"generated judging world ({first.setting('world.n_train', 4000)} training "
             f"pairs, K = {first.setting('world.n_digits', 5)} digits, raystudy's biased "
             f"teacher), {judge}, {device}")
    notes = [f"Scope of every verdict: {scope}. A mechanism study: raystudy's reading of "
             "FairJudge's stages and reward, not the paper's data or model."]
    return Analysis(tables=[arms_table(arms)], figures=figures(arms, figures_dir),
                    claims=judge_claims(arms, scope), notes=notes,
                    summary={"arms": {k: len(v) for k, v in arms.items()}})
