"""The speculative_decoding report: claims S1-S4 (paired over seeds, Holm within each family,
every tested row gated by exactness and by the target having learned the compared domains,
scoped to the in-house models and domains), SPEED-Bench's serving claims as rows not run,
the acceptance length per domain, draft and gamma, the acceptance per draft position, the
subset errors, and figures of the AL per domain, the step-length histograms and the subset
errors.

Seeds are the units: the trials of one seed share its target (trained once per seed) and
its prompts, so a seed's value of a measure is its mean over the seed's trials of the draft
kind (over its gammas). A run whose trials differ in anything else (the models, the data,
the decode length, the pruned vocabulary) gets one set of families per cell.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from raystudy import (
    Analysis,
    Claim,
    RunResults,
    Table,
    TrialRecord,
    claims,
    mean_metric,
    save_figure,
)
from raystudy.algorithms import stats
from raystudy.studies.speculative_decoding.config import RANDOM, SUBSETS

ORDER = ("code", "prose", "longtail")
"""The stdlib domains first, in this order; other (file) domains after them, random last."""
CELL_KEYS = ("model.source", "model.target", "model.draft", "model.d_model", "model.n_layers",
             "model.draft_d_model", "train.steps", "draft.order", "data.source", "data.path",
             "data.train_bytes", "data.n_prompts", "data.prompt_len", "decode.new_tokens",
             "decode.temperature", "prune.vocab", "subset.fraction")
PAPER_DIRECTION = ("two-sided; the paper's direction: random-token inputs overestimate "
                   "throughput (about 23 % with SD on), i.e. random prompts accept longer")

Value = Callable[[TrialRecord], float]


def draft_of(trial: TrialRecord) -> str:
    return str(trial.setting("draft.kind", "gpt"))


def gamma_of(trial: TrialRecord) -> int:
    return int(trial.setting("decode.gamma", 4))


def seed_of(trial: TrialRecord) -> int:
    return int(trial.setting("run.seed", 0))


def cell_of(trial: TrialRecord) -> tuple[Any, ...]:
    """What a claim holds fixed: the models, the data, the decode length and the pruning."""
    return tuple(trial.setting(key) for key in CELL_KEYS)


def domains_of(trials: list[TrialRecord]) -> list[str]:
    """The decoded domains: code, prose, longtail first, other categories, then random."""
    found = {m.group(1) for t in trials for key in t.last
             if (m := re.fullmatch(r"eval/([^/]+)/al", key))}
    rest = sorted(found - set(ORDER) - {RANDOM})
    return [d for d in ORDER if d in found] + rest + ([RANDOM] if RANDOM in found else [])


def real_of(trials: list[TrialRecord]) -> list[str]:
    return [d for d in domains_of(trials) if d != RANDOM]


def al(domain: str, prefix: str = "eval") -> Value:
    return lambda t: t.metric(f"{prefix}/{domain}/al")


def mean_al(domains: list[str]) -> Value:
    """The mean of the domains' ALs (NaN without domains)."""
    return lambda t: float(np.mean([t.metric(f"eval/{d}/al") for d in domains])) \
        if domains else math.nan


def subset_error(name: str) -> Value:
    return lambda t: t.metric(f"subset/{name}/abs_error")


def prune_drop(trial: TrialRecord, domain: str) -> float:
    """The AL the pruned draft loses on ``domain``: full - pruned."""
    return trial.metric(f"eval/{domain}/al") - trial.metric(f"pruned/{domain}/al")


def did(trial: TrialRecord) -> float:
    """S4's difference in differences: the drop on longtail minus the drop on code."""
    return prune_drop(trial, "longtail") - prune_drop(trial, "code")


def by_seed(trials: list[TrialRecord], value: Value) -> dict[int, float]:
    """Per seed, the mean of ``value`` over its trials (non-finite values left out)."""
    seeds: dict[int, list[float]] = defaultdict(list)
    for t in trials:
        v = value(t)
        if math.isfinite(v):
            seeds[seed_of(t)].append(v)
    return {seed: float(np.mean(v)) for seed, v in seeds.items()}


def paired(a: dict[int, float], b: dict[int, float], alternative: stats.Alternative
           ) -> stats.PairedComparison:
    """a - b over the seeds both have."""
    seeds = sorted(set(a) & set(b))
    return stats.paired_comparison([a[s] for s in seeds], [b[s] for s in seeds], alternative)



# ----------------------------------------------------------------------------- preconditions
def exact(trials: list[TrialRecord]) -> claims.Precondition:
    """Greedy SD reproduced the target's greedy decoding on every prompt of every trial."""
    counts = [t.metric("eval/greedy_mismatches") for t in trials]
    checked = [c for c in counts if math.isfinite(c)]
    prompts = sum(t.metric(f"eval/{d}/prompts", 0.0) for t in trials for d in domains_of([t])
                  if math.isfinite(t.metric("eval/greedy_mismatches")))
    return claims.Precondition(
        "SD is exact: greedy SD equals the target's greedy decoding on every prompt",
        bool(checked) and len(checked) == len(counts) and sum(checked) == 0,
        f"{int(sum(checked))} mismatching prompts of {int(prompts)} in {len(checked)} "
        f"trial{'' if len(checked) == 1 else 's'}"
        + ("" if len(checked) == len(counts) else
           f"; {len(counts) - len(checked)} trials not checked (decode.check_greedy=false)"))


def learned(trials: list[TrialRecord], domains: list[str]) -> claims.Precondition:
    """The target's bits per token on each domain's prompts stay below the domain's unigram
    entropy in every trial: a target that learned nothing has no acceptance to compare."""
    statement = (f"the target learned {', '.join(domains)}: its bits per token on the "
                 "prompts stay below the domain's unigram entropy (bits per byte: tokens are "
                 "bytes for the byte models)")
    parts, holds = [], bool(trials) and bool(domains)
    for d in domains:
        gaps = [(t.metric(f"eval/{d}/bits_per_token"), t.metric(f"data/{d}/unigram_bits"))
                for t in trials]
        finite = [(b, u) for b, u in gaps if math.isfinite(b) and math.isfinite(u)]
        if len(finite) < len(gaps) or not finite:
            holds = False
            parts.append(f"{d}: not measured in {len(gaps) - len(finite)} trials")
            continue
        bits, unigram = max(finite, key=lambda pair: pair[0] - pair[1])
        holds = holds and bits < unigram
        parts.append(f"{d} {bits:.2f} vs {unigram:.2f} bits")
    return claims.Precondition(statement, holds,
                               "worst trial: " + "; ".join(parts) if parts else "no domain")


def pruning_bites(full: dict[int, float], pruned: dict[int, float], domain: str
                  ) -> claims.Precondition:
    """S4's gate: pruning lowers the AL on ``domain`` at all (the paired interval of the
    drop lies above 0)."""
    drop = paired(full, pruned, "greater")
    return claims.Precondition(
        f"pruning the draft vocabulary lowers the AL on {domain} at all (paired interval of "
        "the drop above 0)", bool(math.isfinite(drop.ci_low) and drop.ci_low > 0),
        f"AL drop {drop.mean_difference:+.3f} [{drop.ci_low:.3f}, {drop.ci_high:.3f}] over "
        f"{drop.n} seeds")


# ----------------------------------------------------------------------------- claims
def s1(arms: dict[str, list[TrialRecord]], scope: str, case: str) -> list[Claim]:
    """S1: code accepts longer than prose, per draft kind (Holm over the kinds)."""
    tests = []
    for kind, trials in arms.items():
        code, prose = by_seed(trials, al("code")), by_seed(trials, al("prose"))
        if code and prose:
            tests.append(claims.Test(
                f"S1: code accepts longer than prose ({kind} draft){case}",
                "AL (tokens per target call): code - prose", paired(code, prose, "greater"),
                "greater", preconditions=(exact(trials), learned(trials, ["code", "prose"]))))
    return (claims.holm_family(tests, f"{len(tests)} draft kinds", scope=scope) if tests else
            [claims.missing_claim(f"S1: code accepts longer than prose{case}",
                                  "paired sign-flip", "AL: code - prose",
                                  "the run decoded no code and prose prompts", scope=scope)])


def s2(arms: dict[str, list[TrialRecord]], scope: str, case: str) -> list[Claim]:
    """S2: random-token prompts give another AL than the real ones (two-sided, per draft
    kind, Holm over the kinds)."""
    tests = []
    for kind, trials in arms.items():
        real = real_of(trials)
        rand = by_seed(trials, al(RANDOM))
        mean_real = by_seed(trials, mean_al(real))
        if rand and mean_real:
            result = paired(rand, mean_real, "two-sided")
            tests.append(claims.Test(
                f"S2: random-token prompts give another AL than real prompts ({kind} draft)"
                f"{case}", f"AL: random - mean over {', '.join(real)}", result,
                "greater" if result.mean_difference >= 0 else "less",
                note=f"{PAPER_DIRECTION}; the side shown is the observed one",
                preconditions=(exact(trials), learned(trials, real))))
    return (claims.holm_family(tests, f"{len(tests)} draft kinds", scope=scope) if tests else
            [claims.missing_claim(f"S2: random-token prompts give another AL than real "
                                  f"prompts{case}", "paired sign-flip, two-sided",
                                  "AL: random - real", "the run decoded no random and real "
                                  "prompts", scope=scope)])


def s3(trials: list[TrialRecord], scope: str, case: str) -> list[Claim]:
    """S3: the diverse subset's error is below the random and the near-duplicate subsets'
    (each seed's errors averaged over its trials; Holm over the two comparisons)."""
    errors = {name: by_seed(trials, subset_error(name)) for name in SUBSETS}
    if not errors["diverse"]:
        return [claims.missing_claim(f"S3: a diverse prompt subset estimates each domain's AL "
                                     f"better{case}", "paired sign-flip", "|AL error|",
                                     "no trial reported the subset errors", scope=scope)]
    size, pool = mean_metric(trials, "subset/size"), mean_metric(trials, "subset/pool")
    draws = sorted({int(t.setting("subset.draws", 20)) for t in trials})
    note = (f"subsets of {size:.0f} of the {pool:.0f} pooled real prompts (embeddings: "
            f"normalised token histograms), errors averaged over "
            f"{', '.join(map(str, draws))} seeded draws and the seed's trials")
    gates = (exact(trials), learned(trials, real_of(trials)))
    words = {"random": "a random subset", "near_duplicate": "a near-duplicate-heavy subset "
             "(the nearest neighbours of one seeded prompt)"}
    tests = [claims.Test(
        f"S3: a diverse 10 % prompt subset estimates each domain's AL with lower error than "
        f"{words[name]} of equal size{case}",
        f"mean |subset AL - pool AL| over domains: {name} - diverse",
        paired(errors[name], errors["diverse"], "greater"), "greater", note=note,
        preconditions=gates) for name in ("random", "near_duplicate")]
    return claims.holm_family(tests, "2 comparisons", scope=scope)


def s4(arms: dict[str, list[TrialRecord]], scope: str, case: str) -> list[Claim]:
    """S4: pruning the draft's vocabulary costs more AL on longtail than on code (difference
    in differences, per draft kind, Holm over the kinds), gated by pruning biting on
    longtail at all."""
    tests = []
    for kind, trials in arms.items():
        full = {d: by_seed(trials, al(d)) for d in ("code", "longtail")}
        pruned = {d: by_seed(trials, al(d, "pruned")) for d in ("code", "longtail")}
        if not all(pruned.values()):
            continue
        differences = by_seed(trials, did)
        m = sorted({int(t.setting("prune.vocab", 0)) for t in trials})
        kept = ", ".join(f"{d} {mean_metric(trials, f'data/{d}/kept_share'):.0%}"
                         for d in ("longtail", "code"))
        tests.append(claims.Test(
            f"S4: pruning the draft vocabulary costs more AL on longtail than on code ({kind} "
            f"draft){case}", "AL drop from pruning: longtail - code (difference in "
            "differences)", paired(differences, dict.fromkeys(differences, 0.0), "greater"),
            "greater",
            note=f"draft vocabulary pruned to the top {', '.join(map(str, m))} training tokens"
                 f"; share of prompt tokens kept: {kept}",
            preconditions=(exact(trials), learned(trials, ["code", "longtail"]),
                           pruning_bites(full["longtail"], pruned["longtail"], "longtail"))))
    return (claims.holm_family(tests, f"{len(tests)} draft kinds", scope=scope) if tests else
            [claims.missing_claim(f"S4: pruning the draft vocabulary costs more AL on longtail "
                                  f"than on code{case}", "paired sign-flip",
                                  "AL drop: longtail - code", "the run decoded no pruned "
                                  "code and longtail prompts (prune.vocab = 0?)", scope=scope)])


def not_run_rows() -> list[Claim]:
    """SPEED-Bench's claims and regimes this study cannot test."""
    return [
        claims.not_run(
            "Synthetic random-token inputs overestimate SD throughput (about 23 %), and "
            "throughput varies with concurrency",
            "serving engines (vLLM, TensorRT-LLM, SGLang) on GPUs across concurrencies",
            "a 2-core CPU measures Python overhead, not serving throughput; S2 tests the "
            "acceptance-level mechanism on random-byte prompts"),
        claims.not_run(
            "The optimal draft length depends on the batch size",
            "batched serving on GPUs (batch sizes up to 512)",
            "every decode here is one prompt at a time; gamma's effect on AL is in the table"),
        claims.not_run(
            "Native MTP heads accept longer than post-trained EAGLE3 drafters",
            "production models with MTP heads and EAGLE3 drafters",
            "no such model or drafter is here and nothing is downloaded; the drafts are a "
            "small GPT and a byte n-gram"),
        claims.not_run(
            "The Qualitative split (880 prompts, 11 categories x 80, selected for semantic "
            "diversity) and the Throughput splits of 1k-32k input tokens, 1,536 prompts each "
            "in 3 entropy tiers", "SPEED-Bench's data",
            "its rows are placeholders rebuilt at run time from 14 hub data sets, so it cannot "
            "be built offline; data.source=file reads a locally materialised split"),
    ]


# ----------------------------------------------------------------------------- report
def scope_of(trials: list[TrialRecord]) -> str:
    """The models, the data and the hardware the verdicts hold for."""
    first = trials[0]
    device = "GPU" if first.setting("run.device", "cpu") == "cuda" else "CPU"
    if first.setting("model.source", "trained") == "hf":
        models = (f"local checkpoints {first.setting('model.target')} (target) and "
                  f"{first.setting('model.draft')} (draft)")
    else:
        models = "in-house byte-level GPT target and draft"
    if first.setting("data.source", "stdlib") == "file":
        data = (f"prompt files from {first.setting('data.path')} (categories renamed by "
                "data.rename) and random tokens")
    else:
        data = "stdlib-derived domains"
    return f"{models} on {data}, {device}, plain torch; not SPEED-Bench prompts"


def _groups(trials: list[TrialRecord]) -> dict[tuple[str, int], list[TrialRecord]]:
    out: dict[tuple[str, int], list[TrialRecord]] = defaultdict(list)
    for t in trials:
        out[(draft_of(t), gamma_of(t))].append(t)
    return dict(sorted(out.items()))


def al_table(trials: list[TrialRecord], label: str) -> Table:
    """AL per domain, draft and gamma (means over seeds), with the pruned draft's."""
    domains = domains_of(trials)
    pruned = [d for d in domains if any(math.isfinite(t.metric(f"pruned/{d}/al"))
                                        for t in trials)]
    rows = []
    for (kind, gamma), members in _groups(trials).items():
        calls = np.nanmean([mean_metric(members, f"eval/{d}/target_calls_per_token")
                            for d in domains]) if domains else math.nan
        seconds = np.nanmean([mean_metric(members, f"eval/{d}/seconds_per_token")
                              for d in domains]) if domains else math.nan
        rows.append([kind, gamma, len({seed_of(t) for t in members})]
                    + [mean_metric(members, f"eval/{d}/al") for d in domains]
                    + [mean_metric(members, f"pruned/{d}/al") for d in pruned]
                    + [float(calls), float(seconds),
                       sum(t.metric("eval/greedy_mismatches", 0.0) for t in members)])
    return Table(f"Acceptance length per domain, draft and gamma (means over seeds){label}",
                 ["draft", "gamma", "seeds", *[f"AL {d}" for d in domains],
                  *[f"AL {d} (pruned)" for d in pruned], "target calls / token",
                  "s / token", "greedy mismatches"], rows,
                 note="AL: tokens emitted per target call (accepted drafts + 1), the mean over "
                      "prompts; pruned: the same draft restricted to the most frequent "
                      "training tokens; s / token: process CPU time on CPU (trials share the "
                      "cores), secondary")


def position_table(trials: list[TrialRecord], label: str) -> Table:
    """Per draft, gamma and domain: AL, the conditional acceptance per draft position,
    and the target's bits per token beside the domain's unigram entropy."""
    gammas = max((gamma_of(t) for t in trials), default=1)
    rows = []
    for (kind, gamma), members in _groups(trials).items():
        for d in domains_of(members):
            rows.append([kind, gamma, d, mean_metric(members, f"eval/{d}/al"),
                         mean_metric(members, f"eval/{d}/al_pooled")]
                        + [mean_metric(members, f"eval/{d}/conditional_{k}")
                           for k in range(1, gammas + 1)]
                        + [mean_metric(members, f"eval/{d}/bits_per_token"),
                           mean_metric(members, f"data/{d}/unigram_bits")])
    return Table(f"Acceptance per draft position (means over seeds){label}",
                 ["draft", "gamma", "domain", "AL", "AL (pooled steps)",
                  *[f"P(accept {k} | {k - 1})" for k in range(1, gammas + 1)],
                  "target bits / token", "unigram bits"], rows,
                 note="conditional acceptance at draft position k: P(step length >= k + 1 | "
                      ">= k), specdec_bench's definition; bits per token are bits per byte for "
                      "the byte models")


def subset_table(trials: list[TrialRecord], label: str) -> Table:
    rows = [[kind, gamma, len(members), mean_metric(members, "subset/size"),
             mean_metric(members, "subset/pool")]
            + [mean_metric(members, f"subset/{name}/abs_error") for name in SUBSETS]
            for (kind, gamma), members in _groups(trials).items()]
    return Table(f"Subset estimates of each domain's AL: mean absolute error{label}",
                 ["draft", "gamma", "trials", "subset", "pool", *SUBSETS], rows,
                 note="mean over domains of |subset AL - pool AL|, over seeded draws; diverse: "
                      "select_diverse (raystudy's reading of the Qualitative selection), "
                      "near_duplicate: the nearest neighbours of one seeded prompt")


def figures(trials: list[TrialRecord], figures_dir: Path, label: str
            ) -> list[tuple[str, Path]]:
    """AL per domain and (draft, gamma); the step-length histograms at the largest gamma;
    the subset errors per rule with each seed's value."""
    from matplotlib.figure import Figure

    out = []
    domains = domains_of(trials)
    groups = _groups(trials)
    fig = Figure(figsize=(8, 3.6))
    ax = fig.subplots()
    width = 0.8 / max(len(groups), 1)
    for i, ((kind, gamma), members) in enumerate(groups.items()):
        ax.bar(np.arange(len(domains)) + i * width,
               [mean_metric(members, f"eval/{d}/al") for d in domains], width,
               label=f"{kind}, gamma {gamma}")
    ax.set_xticks(np.arange(len(domains)) + 0.4 - width / 2, domains)
    ax.set(ylabel="AL (tokens per target call)", title=f"acceptance length per domain{label}")
    ax.legend(fontsize=7)
    out.append((f"Acceptance length per domain, draft and gamma{label}",
                save_figure(fig, figures_dir / "al_by_domain.png")))

    top = max((gamma_of(t) for t in trials), default=1)
    fig = Figure(figsize=(3.2 * max(len(domains), 1), 3.2))
    axes = np.atleast_1d(fig.subplots(1, max(len(domains), 1), sharey=True))
    kinds = sorted({draft_of(t) for t in trials if gamma_of(t) == top})
    for ax, d in zip(axes, domains, strict=False):
        for i, kind in enumerate(kinds):
            members = [t for t in trials if draft_of(t) == kind and gamma_of(t) == top]
            counts = np.array([sum(t.metric(f"eval/{d}/steps_{n}", 0.0) for t in members)
                               for n in range(1, top + 2)])
            share = counts / counts.sum() if counts.sum() else counts
            ax.bar(np.arange(1, top + 2) + (i - (len(kinds) - 1) / 2) * 0.4, share, 0.4,
                   label=kind)
        ax.set(xlabel="tokens per target call", title=d)
        ax.legend(fontsize=7)
    axes[0].set(ylabel=f"share of steps (gamma {top})")
    out.append((f"Step-length histograms per domain at gamma = {top}, pooled over seeds{label}",
                save_figure(fig, figures_dir / "step_lengths.png")))

    errors = {name: by_seed(trials, subset_error(name)) for name in SUBSETS}
    if errors["diverse"]:
        fig = Figure(figsize=(5, 3.6))
        ax = fig.subplots()
        for i, name in enumerate(SUBSETS):
            values = list(errors[name].values())
            ax.bar(i, float(np.mean(values)) if values else math.nan, 0.6, alpha=0.6)
            ax.plot([i] * len(values), values, "k.", ms=4)
        ax.set_xticks(range(len(SUBSETS)), SUBSETS)
        ax.set(ylabel="mean |subset AL - pool AL|", title=f"subset errors (S3){label}")
        out.append((f"Error of each subset rule's per-domain AL estimate; dots: seeds{label}",
                    save_figure(fig, figures_dir / "subset_errors.png")))
    return out


def notes(trials: list[TrialRecord]) -> list[str]:
    """Exactness over every trial, the readings, and what the timings are."""
    bad = [t.trial_id for t in trials if t.metric("eval/greedy_mismatches", 0.0) > 0]
    return [
        f"Exactness: greedy SD equalled the target's greedy decoding on every prompt in "
        f"{len(trials) - len(bad)} of {len(trials)} trials"
        + (f" (mismatches in: {', '.join(bad)})" if bad else "") + ".",
        "Readings (raystudy's, labelled so): 'domain' = code, prose and longtail (prose "
        "transliterated into Cyrillic and Greek, a stand-in for multilingual text) from "
        "Python's standard library; 'random-token prompts' = uniform random bytes; the "
        "diversity selection = farthest-point on cosine distance of token histograms; the "
        "models are in-house byte-level GPTs, not SPEED-Bench's (docs/speculative_decoding.md).",
        "Seconds per token are process CPU time of plain-torch decoding on shared cores: they "
        "say nothing about serving throughput.",
    ]


def analyze(results: RunResults, figures_dir: Path) -> Analysis:
    trials = [t for t in results.trials if t.history]
    if not trials:
        return Analysis(notes=["No trial reported: nothing to analyse."])
    cells: dict[tuple[Any, ...], list[TrialRecord]] = defaultdict(list)
    for t in trials:
        cells[cell_of(t)].append(t)
    ordered = sorted(cells.values(), key=len, reverse=True)
    rows: list[Claim] = []
    tables: list[Table] = []
    for i, members in enumerate(ordered):
        case = f" (cell {i + 1})" if len(ordered) > 1 else ""
        arms: dict[str, list[TrialRecord]] = defaultdict(list)
        for t in members:
            arms[draft_of(t)].append(t)
        arms = dict(sorted(arms.items()))
        scope = scope_of(members)
        rows += s1(arms, scope, case) + s2(arms, scope, case) + s3(members, scope, case) \
            + s4(arms, scope, case)
        tables += [al_table(members, case), position_table(members, case),
                   subset_table(members, case)]
    return Analysis(
        tables=tables, figures=figures(ordered[0], figures_dir,
                                       " (largest cell)" if len(ordered) > 1 else ""),
        claims=rows + not_run_rows(), notes=notes(trials),
        summary={"cells": len(ordered),
                 "trials": {kind: sum(draft_of(t) == kind for t in trials)
                            for kind in sorted({draft_of(t) for t in trials})},
                 "greedy_mismatches": sum(t.metric("eval/greedy_mismatches", 0.0)
                                          for t in trials)})
